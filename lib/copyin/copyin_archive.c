/*
 * copyin_archive.c: copying an archive (anything libarchive reads: tar,
 * pax, cpio, zip; gzip, xz, zstd, bzip2 filters; stdin) into the image.
 * Entries are made in archive order, which is deterministic for a given
 * archive. The stream can only be read in order, so file data is written
 * here by the scanner as it is decompressed; sparse entries arrive as
 * blocks with offsets and their gaps stay holes.
 *
 * Safety: every path is cleaned (cp_path_clean); absolute paths and ".."
 * are refused, and resolution inside the image refuses to pass through a
 * symlink, so nothing lands outside the destination directory. A hard
 * link's target is held to the same rules and is only looked up, never
 * made; a refused or missing target skips the entry as a refused name
 * does. An archive that yields no entry at all is the source's error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <archive.h>
#include <archive_entry.h>

#include "copyin.h"

/* mask: the access ACL's mask, or -1. libarchive folds the ACL's
 * GROUP_OBJ into the mode's group bits, where Linux keeps the mask. */
static errcode_t entry_xattrs(struct archive_entry *e, struct cp_xattrs *x,
			      int *mask, int lenient)
{
	const char *name;
	const void *value;
	size_t size;
	errcode_t err = 0;

	cp_xattrs_clear(x);
	archive_entry_xattr_reset(e);
	while (!err && archive_entry_xattr_next(e, &name, &value, &size) ==
	       ARCHIVE_OK)
		err = cp_xattrs_add(x, name, value, size);
	if (!err)
		err = cp_acl_from_archive(e, ARCHIVE_ENTRY_ACL_TYPE_ACCESS,
					  "system.posix_acl_access", x, mask,
					  lenient);
	if (!err)
		err = cp_acl_from_archive(e, ARCHIVE_ENTRY_ACL_TYPE_DEFAULT,
					  "system.posix_acl_default", x, NULL,
					  lenient);
	return err;
}

errcode_t cp_archive_xattrs(struct archive_entry *e, struct cp_xattrs *x)
{
	return entry_xattrs(e, x, NULL, 1);
}

static void entry_attr(struct archive_entry *e, struct e3_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = archive_entry_mode(e);
	a->uid = (uint32_t)archive_entry_uid(e);
	a->gid = (uint32_t)archive_entry_gid(e);
	a->mtime.tv_sec = archive_entry_mtime(e);
	a->mtime.tv_nsec = archive_entry_mtime_nsec(e);
	a->atime = a->mtime;
	a->ctime = a->mtime;
	if (archive_entry_atime_is_set(e)) {
		a->atime.tv_sec = archive_entry_atime(e);
		a->atime.tv_nsec = archive_entry_atime_nsec(e);
	}
	if (archive_entry_ctime_is_set(e)) {
		a->ctime.tv_sec = archive_entry_ctime(e);
		a->ctime.tv_nsec = archive_entry_ctime_nsec(e);
	}
}

/* A hard link entry's target (a cleaned relative path) under dest. Only
 * looked up: going through cp_resolve_parent would make the missing
 * directories of a target that is not there (and a later entry of that
 * name would find a directory in its way). A missing component, or one
 * that is not a directory, means the target is not in the image; a
 * symlink on the way is refused as it is for entry names. */
static errcode_t find_target(struct cp_ctx *c, char *rel, ext2_ino_t *ino)
{
	ext2_ino_t cur = c->dest;
	char *p = rel, *next;
	uint16_t mode;
	errcode_t err;

	if (rel[0] == '\0')
		return E3_IS_DIR;	/* "." : the destination itself */
	for (;;) {
		next = strchr(p, '/');
		if (next)
			*next = '\0';
		err = e3_lookup(c->img, cur, p, &cur);
		if (err || !next)
			break;
		err = cp_ino_mode(c, cur, &mode);
		if (err)
			return err;
		if (LINUX_S_ISLNK(mode))
			return E3_SYMLINK_IN_PATH;
		if (!LINUX_S_ISDIR(mode))
			return E3_LINK_TARGET_MISSING;
		p = next + 1;
	}
	if (cp_is_missing(err))
		return E3_LINK_TARGET_MISSING;
	if (!err)
		*ino = cur;
	return err;
}

/* A hard link entry. Its target is found before the name is made free:
 * when the name already is that file (a link to itself, or a second
 * link entry for the same pair) the link is in place, and replacing the
 * name first would free the very file it asks for. */
static errcode_t make_link(struct cp_ctx *c, const char *hl, const char *rel,
			   const char *path)
{
	ext2_ino_t parent, to, here;
	const char *leaf;
	uint16_t mode;
	char *hrel;
	errcode_t err;

	if (hl[0] == '/')
		return E3_PATH_ESCAPES;
	hrel = strdup(hl);
	if (!hrel)
		return ENOMEM;
	err = cp_path_clean(hrel);
	if (!err)
		err = find_target(c, hrel, &to);
	free(hrel);
	/* the target is there: now the link's own name may make its parents */
	if (!err)
		err = cp_resolve_parent(c, rel, &parent, &leaf);
	if (err)
		return err;
	if (e3_lookup(c->img, parent, leaf, &here) == 0 && here == to) {
		/* in place already, unless it is a directory: no links to
		 * those, as e3_link would say */
		err = cp_ino_mode(c, to, &mode);
		if (!err && LINUX_S_ISDIR(mode))
			err = E3_IS_DIR;
	} else {
		err = cp_prepare_name(c, parent, leaf, path);
		if (!err)
			err = e3_link(c->img, parent, leaf, to);
	}
	if (!err)
		cp_count_file(c, 0, path);
	return err;
}

/* The entry's data into f, all-zero blocks left as holes unless keep;
 * size E3_SIZE_UNKNOWN: as much as the stream holds (*written says how
 * much). */
static errcode_t write_data(struct archive *ar, e3_file_t *f, unsigned bs,
			    int keep, uint64_t size, uint64_t *written)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	struct cp_zw z;
	errcode_t err;
	int r;

	err = cp_zw_init(&z, f, bs, keep);
	if (err)
		return err;
	while ((r = archive_read_data_block(ar, &buf, &len, &off)) == ARCHIVE_OK) {
		if (len == 0)
			continue;
		err = cp_zw_write(&z, buf, len, (uint64_t)off);
		if (err)
			break;
		if ((uint64_t)off + len > *written)
			*written = (uint64_t)off + len;
	}
	if (!err)
		err = cp_zw_finish(&z);
	cp_zw_free(&z);
	if (err)
		return err;
	if (r != ARCHIVE_EOF)
		return E3_ARCHIVE_BAD;	/* the source's fault, not the image's */
	if (size == E3_SIZE_UNKNOWN)
		return e3_file_set_size(f, *written);	/* a hole at the end */
	*written = size;
	return e3_file_set_size(f, size);
}

/* Regular files whose data is written wait here, open, to be closed
 * CP_BATCH_FILES at a time: e3_file_close_many then writes their last
 * blocks together (one pwritev for files that meet on disk; small files
 * one by one cost ext4 three times the CPU) and takes the image lock
 * once. Anything but a new regular file closes them first, so links,
 * overwrites and directories only ever see closed files. */
struct arc_pending {
	e3_file_t *f;
	uint64_t size;
	char *path;
};

struct arc {
	struct cp_ctx *c;
	struct archive *ar;
	struct cp_xattrs x;
	struct arc_pending pend[CP_BATCH_FILES];
	size_t npend;
	int broken;			/* an entry's data could not be read */
};

/* Blocks an entry needs in the image, as the measure counts them: data
 * and indirect blocks of its size (holes are not known before it is
 * read: counted as data), a slow symlink's block, one for xattrs. */
static uint64_t entry_need(unsigned bs, struct archive_entry *e)
{
	struct cp_ind_state st = { 0 };
	int64_t size = archive_entry_size(e);
	uint64_t n = size > 0 ? ((uint64_t)size + bs - 1) / bs : 0;

	if (archive_entry_filetype(e) == AE_IFLNK)
		return 2;
	if (archive_entry_filetype(e) != AE_IFREG)
		return 1;
	return n + cp_ind_blocks(bs, 0, n, &st) + 1;
}

/* Closes the waiting files; each is counted, or its error reported. The
 * first error that stops the copy is returned (reported already), after
 * all are closed. */
static errcode_t close_pending(struct arc *s)
{
	e3_file_t *files[CP_BATCH_FILES];
	errcode_t errs[CP_BATCH_FILES], err = 0, e;
	size_t n = s->npend;

	for (size_t i = 0; i < n; i++)
		files[i] = s->pend[i].f;
	s->npend = 0;
	e3_file_close_many(files, n, errs);
	for (size_t i = 0; i < n; i++) {
		struct arc_pending *p = &s->pend[i];

		if (!errs[i])
			cp_count_file(s->c, p->size, p->path);
		e = cp_entry_result(s->c, p->path, errs[i]);
		if (!err)
			err = e;
		free(p->path);
	}
	return err;
}

static errcode_t make_regular(struct arc *s, struct archive_entry *e,
			      ext2_ino_t parent, const char *leaf,
			      const struct e3_attr *a, const char *path)
{
	uint64_t size = archive_entry_size_is_set(e) ?
			(uint64_t)archive_entry_size(e) : E3_SIZE_UNKNOWN;
	struct arc_pending *p;
	uint64_t written = 0;
	e3_file_t *f;
	errcode_t err, err2;
	char *pcopy;

	err = e3_create(s->c->img, parent, leaf, a, size, &f);
	if (err)
		return err;
	err = cp_set_xattrs(s->c, e3_file_ino(f), &s->x, path);
	if (!err)
		err = write_data(s->ar, f, s->c->bs, s->c->o->keep_zeros, size,
				 &written);
	if (err == E3_ARCHIVE_BAD)
		s->broken = 1;
	pcopy = err ? NULL : strdup(path);
	if (!pcopy) {
		err2 = e3_file_close(f);
		err = err ? err : err2 ? err2 : ENOMEM;
		/* xattrs that would not go on: no file without them (one
		 * whose data could not be read keeps what was read) */
		return err == E3_ARCHIVE_BAD ? err :
		       cp_unmake(s->c, parent, leaf, err);
	}
	p = &s->pend[s->npend++];
	*p = (struct arc_pending){ .f = f, .path = pcopy, .size = written };
	return 0;
}

static errcode_t make_entry(struct arc *s, struct archive_entry *e,
			    char *rel, const char *path)
{
	struct cp_ctx *c = s->c;
	const char *leaf, *hl, *target;
	ext2_ino_t parent, ino = 0;
	struct e3_attr a;
	errcode_t err;

	/* a link entry is skipped when its target is not there: before
	 * anything, its own parents included, is made for it */
	hl = archive_entry_hardlink(e);
	if (hl && archive_entry_filetype(e) != AE_IFDIR)
		return make_link(c, hl, rel, path);
	err = cp_resolve_parent(c, rel, &parent, &leaf);
	if (err)
		return err;
	int mask = -1;

	entry_attr(e, &a);
	cp_map_attr(c, &a);
	err = entry_xattrs(e, &s->x, &mask, 0);
	if (err)
		return err;
	if (mask >= 0)
		a.mode = (a.mode & ~(uint32_t)070) | ((uint32_t)mask << 3);
	if (archive_entry_filetype(e) == AE_IFDIR) {
		err = cp_make_dir(c, parent, leaf, &a, path, &ino, NULL);
		if (!err)
			err = cp_set_xattrs(c, ino, &s->x, path);
		if (!err)
			cp_count_file(c, 0, path);
		return err;
	}
	/* --overwrite: the blocks the entry will need, so that what the
	 * replaced one frees is made reusable (a commit) when they are */
	c->replace_need = entry_need(c->bs, e);
	c->want = (struct cp_want){ .set = 1, .mode = a.mode,
		.size = archive_entry_filetype(e) == AE_IFLNK ?
			strlen(archive_entry_symlink(e) ?
			       archive_entry_symlink(e) : "") :
			archive_entry_filetype(e) == AE_IFREG &&
			archive_entry_size_is_set(e) ?
			(uint64_t)archive_entry_size(e) : 0,
		.mtime = a.mtime };
	err = cp_prepare_name(c, parent, leaf, path);
	c->replace_need = 0;
	c->want.set = 0;
	if (err)
		return err;
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		return make_regular(s, e, parent, leaf, &a, path);
	case AE_IFLNK:
		target = archive_entry_symlink(e);
		err = e3_symlink(c->img, parent, leaf, target ? target : "",
				 &a, &ino);
		break;
	case AE_IFCHR: case AE_IFBLK: case AE_IFIFO: case AE_IFSOCK:
		err = e3_mknod(c->img, parent, leaf, &a, archive_entry_rdev(e),
			       &ino);
		break;
	default:
		return E3_BAD_FILE_TYPE;
	}
	if (!err && (err = cp_set_xattrs(c, ino, &s->x, path)))
		return cp_unmake(c, parent, leaf, err);
	if (!err)
		cp_count_file(c, 0, path);
	return err;
}

/* libarchive's errno for "not this format", as its archive_platform.h
 * picks it (the public header only names it). */
#ifdef EFTYPE
#define ARC_ERRNO_FORMAT EFTYPE
#else
#define ARC_ERRNO_FORMAT EILSEQ
#endif

/* Why an archive gave not one entry, in our words: the system's errno
 * when reading the source failed (a file gone, stdin a directory); when
 * no reader took it (opened is 0), not an archive; else damaged or cut.
 * EINVAL is libarchive's own misuse code, not the source's. */
static errcode_t source_error(struct archive *ar, int opened)
{
	int e = archive_errno(ar);

	if (!opened && e == ARC_ERRNO_FORMAT)
		return E3_SOURCE_TYPE;
	if (e > 0 && e != ARC_ERRNO_FORMAT && e != EINVAL)
		return e;
	return E3_ARCHIVE_BAD;
}

/* src NULL: stdin; fd >= 0: that, from off. On failure *ret is NULL and
 * the error says why. */
static errcode_t archive_open(const char *src, int fd, off_t off,
			      struct archive **ret)
{
	struct archive *ar = archive_read_new();
	errcode_t err;
	int r;

	*ret = NULL;
	if (!ar)
		return ENOMEM;
	archive_read_support_filter_all(ar);
	/* not format_all: its mtree reader takes any text file for an
	 * archive, and a plain file must stay a plain file */
	archive_read_support_format_tar(ar);
	archive_read_support_format_cpio(ar);
	archive_read_support_format_zip(ar);
	archive_read_support_format_7zip(ar);
	archive_read_support_format_iso9660(ar);
	archive_read_support_format_xar(ar);
	if (fd >= 0 && lseek(fd, off, SEEK_SET) < 0) {
		archive_read_free(ar);
		return errno;
	}
	r = fd >= 0 ? archive_read_open_fd(ar, fd, 1 << 16) :
		      archive_read_open_filename(ar, src, 1 << 16);
	if (r != ARCHIVE_OK) {
		err = source_error(ar, 0);
		archive_read_free(ar);
		return err;
	}
	*ret = ar;
	return 0;
}

errcode_t cp_archive_open(const char *src, struct archive **ret)
{
	return archive_open(src, -1, 0, ret);
}

errcode_t cp_archive_open_fd(int fd, off_t off, struct archive **ret)
{
	return archive_open(NULL, fd, off, ret);
}

errcode_t cp_spool_stdin(int *fd, off_t *off)
{
	const char *dir = getenv("TMPDIR");
	char *tmpl = NULL, *buf;
	struct stat st;
	errcode_t err = 0;
	ssize_t n;
	int t;

	*fd = -1;
	*off = 0;
	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
	    (*off = lseek(STDIN_FILENO, 0, SEEK_CUR)) >= 0) {
		*fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		return *fd < 0 ? (errcode_t)errno : 0;
	}
	*off = 0;
	if (!dir || !*dir)
		dir = "/tmp";
	t = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (t < 0) {
		/* no O_TMPFILE there: a named one, unlinked at once */
		if (asprintf(&tmpl, "%s/e3cp-stdin.XXXXXX", dir) < 0)
			return ENOMEM;
		t = mkostemp(tmpl, O_CLOEXEC);
		if (t >= 0)
			unlink(tmpl);
		free(tmpl);
		if (t < 0)
			return errno;
	}
	buf = malloc(CP_BUF_SIZE);
	if (!buf) {
		close(t);
		return ENOMEM;
	}
	while ((n = read(STDIN_FILENO, buf, CP_BUF_SIZE)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		for (ssize_t w, at = 0; at < n; at += w) {
			w = write(t, buf + at, (size_t)(n - at));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0) {
				err = errno;
				break;
			}
		}
		if (err)
			break;
	}
	free(buf);
	if (err) {
		close(t);
		return err;
	}
	*fd = t;
	return 0;
}

/* Names that say "archive" (compared without case): a file so named
 * that libarchive cannot read is an error, not a plain file to copy. */
static int archive_name(const char *path)
{
	static const char *const ext[] = {
		".tar", ".tgz", ".taz", ".tbz", ".tbz2", ".tb2", ".txz",
		".tlz", ".tzst", ".tzs", ".cpio", ".zip", ".7z", ".xar",
		".pax", ".ustar", ".iso",
	};
	const char *base = strrchr(path, '/'), *dot;
	size_t len;

	base = base ? base + 1 : path;
	/* .tar.gz, .cpio.xz, ...: an archive name with a filter after it */
	if (strcasestr(base, ".tar.") || strcasestr(base, ".cpio."))
		return 1;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return 0;
	len = strlen(dot);
	for (size_t i = 0; i < sizeof(ext) / sizeof(*ext); i++)
		if (strlen(ext[i]) == len && strcasecmp(dot, ext[i]) == 0)
			return 1;
	return 0;
}

errcode_t cp_source_kind(const char *path, int no_unpack, int *archive)
{
	struct archive_entry *e;
	struct archive *ar;
	errcode_t err;
	int r, named = archive_name(path);

	*archive = 0;
	if (no_unpack)
		return 0;
	err = cp_archive_open(path, &ar);
	if (!err) {
		r = archive_read_next_header(ar, &e);
		if (r == ARCHIVE_OK || r == ARCHIVE_WARN || r == ARCHIVE_EOF)
			*archive = 1;
		else
			err = source_error(ar, 1);
		archive_read_free(ar);
	}
	if (err == ENOMEM || *archive)
		return err;
	/* libarchive took it for no format at all (a compressed file that
	 * is no archive inside, too): a plain file, unless named one */
	if (err == E3_SOURCE_TYPE)
		return named ? E3_ARCHIVE_NAME : 0;
	/* a format or filter recognised, then damaged or cut */
	if (err == E3_ARCHIVE_BAD)
		return E3_ARCHIVE_UNREADABLE;
	/* the system's error reading it: the tree copy reports a plain
	 * file's; one named as an archive is refused here, with it */
	return named ? err : 0;
}

/* Whether this run has made nothing in the image so far. A file handed
 * to a worker is counted only when it is closed, so all are closed
 * first; then the counters and the deferred directory list (every
 * directory made or given attributes, the destination's parents
 * included) tell it all. */
static errcode_t made_nothing(struct cp_ctx *c, int *nothing)
{
	errcode_t err;
	const struct e3_copyin_stats *st = c->st;

	*nothing = 0;
	err = c->ordered ? cp_close_oldest(c, 0) : cp_flush_batch(c);
	if (!err && c->wq)
		err = e3_workq_wait(c->wq);
	if (err)
		return err;
	pthread_mutex_lock(&c->stat_lock);
	*nothing = !st->files && !st->skipped && !st->errors && !st->bytes &&
		   c->ndirs == 0;
	pthread_mutex_unlock(&c->stat_lock);
	return 0;
}

/* An archive that gave not one entry (stdin empty or not an archive, a
 * stream cut before its first header) is the source's error, told with
 * the source's name; returned, the tool would name the image. When the
 * run has made nothing yet, E3_SOURCE_TYPE stops it, and the tool leaves
 * the image untouched (closing it would still write: the journal's
 * sequence moves on); otherwise the next source goes on, as after an
 * archive cut later. */
static errcode_t source_failed(struct cp_ctx *c, const char *src,
			       errcode_t why)
{
	int nothing;
	errcode_t err = made_nothing(c, &nothing);

	if (err)
		return err;
	cp_error(c, src ? src : "-", why);
	return nothing ? E3_SOURCE_TYPE : 0;
}

/* One archive entry: refused paths are skipped with a message; entry
 * problems are reported and counted; image problems stop the copy. */
static errcode_t copy_one(struct arc *s, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);
	errcode_t err;
	char *rel;

	if (!name)
		return 0;
	if (name[0] == '/') {
		cp_skip(s->c, name, E3_PATH_ESCAPES);
		return 0;
	}
	rel = strdup(name);
	if (!rel)
		return ENOMEM;
	err = cp_path_clean(rel);
	if (err == E3_PATH_ESCAPES) {
		cp_skip(s->c, name, err);
		err = 0;
	} else if (!err && rel[0] == '\0') {
		/* "./" itself: the destination's own attributes */
		struct e3_attr a;

		entry_attr(e, &a);
		cp_map_attr(s->c, &a);
		a.mode = (a.mode & 07777) | 040000;
		err = cp_defer_dirattr(s->c, s->c->dest, &a);
	} else if (!err) {
		/* only a new regular file may join the waiting ones */
		if (archive_entry_filetype(e) != AE_IFREG ||
		    archive_entry_hardlink(e) || s->c->o->overwrite ||
		    s->c->o->update ||
		    s->npend == CP_BATCH_FILES)
			err = close_pending(s);
		if (err) {
			free(rel);
			return err;
		}
		err = make_entry(s, e, rel, name);
		/* refused paths, the entry's or its link target's, and a link
		 * whose target the archive left out (tar --exclude): what the
		 * archive asks for cannot be made, nothing is wrong with the
		 * image, and one exit status says so for all of them */
		if (err == E3_SYMLINK_IN_PATH || err == E3_PATH_ESCAPES ||
		    err == E3_LINK_TARGET_MISSING) {
			cp_skip(s->c, name, err);
			err = 0;
		} else {
			if (!err)
				cp_event_made(s->c, rel);
			err = cp_entry_result(s->c, name, err);
		}
	}
	free(rel);
	return err;
}

errcode_t cp_archive_copy(struct cp_ctx *c, const char *src, ext2_ino_t dest)
{
	struct arc s = { .c = c };
	struct archive_entry *e;
	errcode_t err = 0, e2;
	int r, headers = 0;

	(void)dest;
	/* stdin, read once ahead by the measure: from its spool */
	err = !src && c->spool_fd >= 0 ?
	      cp_archive_open_fd(c->spool_fd, c->spool_off, &s.ar) :
	      cp_archive_open(src, &s.ar);
	if (err == ENOMEM)
		return err;
	if (err)
		return source_failed(c, src, err);
	while (!err) {
		r = archive_read_next_header(s.ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_RETRY)
			continue;
		if (r == ARCHIVE_FATAL && headers) {
			/* cut or damaged after its first entry: told as the
			 * archive's error; what came before stays */
			cp_error(c, src ? src : "-", E3_ARCHIVE_BAD);
			break;
		}
		if (r == ARCHIVE_FATAL) {
			err = source_failed(c, src, source_error(s.ar, 1));
			break;
		}
		headers++;
		err = copy_one(&s, e);
		/* a damaged entry (already told) leaves nothing to read */
		if (!err && s.broken)
			break;
	}
	e2 = close_pending(&s);	/* the stream's end, or the copy stops */
	if (!err)
		err = e2;
	archive_read_free(s.ar);
	cp_xattrs_clear(&s.x);
	free(s.x.v);
	return err;
}
