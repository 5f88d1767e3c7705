/*
 * copyin.h: lib/copyin's private pieces — the engine context shared by the
 * walkers (tree, archive, device table), path checks, and the size
 * estimator. Tools use e3img.h's e3_copyin_* block instead.
 */
#ifndef E3_COPYIN_H
#define E3_COPYIN_H

#include <stdbool.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include "e3img.h"
#include "util/workq.h"

/* One extended attribute read from a source. */
struct cp_xattr {
	char *name;
	void *value;
	size_t size;
};

struct cp_xattrs {
	struct cp_xattr *v;
	size_t n, cap;
};
errcode_t cp_xattrs_add(struct cp_xattrs *x, const char *name,
			const void *value, size_t size);
void cp_xattrs_clear(struct cp_xattrs *x);

/* hard-link map: source (dev, ino) -> image inode */
struct cp_linkmap;
errcode_t cp_linkmap_create(struct cp_linkmap **ret);
void cp_linkmap_free(struct cp_linkmap *m);
ext2_ino_t cp_linkmap_get(struct cp_linkmap *m, uint64_t dev, uint64_t ino);
errcode_t cp_linkmap_put(struct cp_linkmap *m, uint64_t dev, uint64_t ino,
			 ext2_ino_t to);
/* Image inode to was freed (--overwrite removed its last link): no
 * source maps to it any more, even once a new file reuses its number. */
void cp_linkmap_forget(struct cp_linkmap *m, ext2_ino_t to);

/* A directory whose attributes are applied when everything else is done
 * (adding entries would change its times again). */
struct cp_dirattr {
	ext2_ino_t ino;
	size_t seq;			/* order recorded: the last one wins */
	struct e3_attr attr;
};

/* O_NOATIME needs the file's owner or CAP_FOWNER. Asked for our own
 * files always; for others' only until it is first refused, so that a
 * user without the capability does not pay a failed open per file (which
 * doubled the opens of a tree copied by a user who does not own it),
 * and one with it (root, as a rule) keeps the atimes untouched. */
struct cp_noatime {
	uid_t euid;
	int others;			/* [atomic] 1 until refused */
};

static inline void cp_noatime_init(struct cp_noatime *n)
{
	n->euid = geteuid();
	n->others = 1;
}

/* cp_openat's latch for a file of this owner (NULL: always ask). */
static inline int *cp_noatime_for(struct cp_noatime *n, uid_t owner)
{
	return n->euid == owner ? NULL : &n->others;
}

/* The engine's state for one e3_copyin_run. */
struct file_job;
struct selabel_handle;

struct cp_ctx {
	e3_image_t *img;
	struct cp_noatime noatime;	/* for cp_openat */
	gid_t egid, *groups;		/* for cp_mode_readable */
	int ngroups;
	const struct e3_copyin_opts *o;
	struct e3_copyin_stats *st;	/* [stat_lock] */
	pthread_mutex_t stat_lock;
	struct e3_workq *wq;		/* NULL: data written inline */
	unsigned bs;			/* the image's block size */
	struct cp_linkmap *links;
	ext2_ino_t dest;		/* destination directory */
	char *dest_path;		/* its path in the image, no trailing '/' */
	const char *dest_name;		/* one file source copied to a name
					   that is not there (as cp): that
					   name, in dest; NULL: its own */
	char *dest_split;		/* the buffer dest_name points into */
	/* -v names entries by their image paths: the current source's
	 * destination ("" for the root, else "/a/b"), and how much of a
	 * tree entry's source path is the source's own (scanner only) */
	char *dest_shown;
	size_t src_skip;
	int src_single;			/* a file source: its name is shown */
	struct cp_dirattr *dirs;	/* deferred directory attributes */
	size_t ndirs, capdirs;
	int64_t epoch;			/* clamp, -1: none */
	int64_t time_max;		/* the latest time an inode holds */
	double last_progress;		/* [stat_lock] */
	uint64_t drain_est;		/* ordered mode: journal blocks the
					   files made since the last drain
					   take, as counted here (scanner) */
	uint64_t check_est, check_every;	/* unordered mode: journal
					   blocks the files made since
					   commit_point last asked the
					   journal, and how many it lets
					   come between two asks (scanner) */
	uint64_t inflight_blocks;	/* [stat_lock] journal blocks the
					   closes of the files queued to the
					   workers may take (commit_point) */
	struct file_job *job_pool;	/* [stat_lock] finished file jobs
					   kept for the next files (a malloc
					   and a free per file showed in
					   profiles; copyin_tree.c) */
	unsigned njob_pool;		/* [stat_lock] at most 64 */
	char *cache_path;		/* last parent resolved (scanner) */
	struct cp_listings *listings;	/* the measure pass's, or NULL */
	int *archive;			/* per source: 1 an archive file */
	struct selabel_handle *label;	/* --file-contexts, or NULL */
	/* the measure of --file-contexts on what the image holds:
	 * cp_label_tree counts into it instead of labelling (scanner only) */
	struct cp_lmeasure *label_need;
	int spool_fd;			/* stdin read ahead (cp_spool_stdin)
					   for the measure, or -1 */
	off_t spool_off;
	/* --overwrite: the space check passed only by counting what the
	 * replaced entries free, so each removal commits at once to make
	 * its blocks reusable (scanner only) */
	int release_frees;
	uint64_t replace_need;		/* blocks the entry being made needs,
					   0: not known (scanner only) */
	/* --update: the entry about to be made, as cp_prepare_name compares
	 * it with the one of its name (scanner only; set 0: not known, the
	 * old one is replaced); ino: that one, when up to date */
	struct cp_want {
		int set;
		uint32_t mode;		/* S_IF* type */
		uint64_t size;
		struct timespec mtime;	/* as stored (mapped, clamped) */
		ext2_ino_t ino;
	} want;
	ext2_ino_t cache_ino;
	/* ordered mode (opts->reproducible): see cp_close_oldest */
	int ordered;
	pthread_mutex_t order_lock;
	pthread_cond_t order_cond;
	struct file_job *order_head, *order_tail;	/* scanner only */
	size_t order_len, order_lag;
	/* files created, not yet handed to the workers (scanner only) */
	struct file_job *batch_head, *batch_tail;
	size_t batch_n;
	uint64_t batch_bytes;
};

/* Reports an event through the caller's callback (under stat_lock, so
 * lines from workers never interleave). */
void cp_event(struct cp_ctx *c, enum e3_copyin_event ev, const char *path,
	      errcode_t err);
/* An entry made: E3_CP_FILE with its image path (dest_shown/rel). */
void cp_event_made(struct cp_ctx *c, const char *rel);
/* A skipped entry: reported, counted, copying goes on. */
void cp_skip(struct cp_ctx *c, const char *path, errcode_t err);
/* An entry that failed (e.g. exists without --overwrite): reported,
 * counted, copying goes on, the run ends with an error status. */
void cp_error(struct cp_ctx *c, const char *path, errcode_t err);

/* Bytes a worker reads at a time (into the file's buffer, e3_file_wbuf). */
#define CP_BUF_SIZE (1u << 20)

/* Ordered mode: files open at once behind the scanner (closed in bunches
 * of CP_BATCH_FILES once CP_ORDER_LAG + CP_BATCH_FILES are). A constant, so
 * the layout is the same at every -j. */
#define CP_ORDER_LAG 32

/* An image inode's type and permission bits (i_mode). */
errcode_t cp_ino_mode(struct cp_ctx *c, ext2_ino_t ino, uint16_t *mode);

/* llistxattr of the entry name in dirfd (whose path is path): one
 * component to look up instead of the whole path, which the measure pass
 * pays for every entry. Once the kernel lacks that call (ENOSYS, or
 * EPERM from a filter) *fallback is set and path is used from then on. */
ssize_t cp_llistxattr_at(int dirfd, const char *name, const char *path,
			 char *list, size_t size, int *fallback);

/* Whether a source's mode bits let us read it (root: always). An ACL
 * may say otherwise either way: this only steers who opens the file. */
int cp_mode_readable(const struct cp_ctx *c, const struct stat *st);

/* Whether err says an image lookup found no such name. */
int cp_is_missing(errcode_t err);

/* Whether the regular file SRC path is an archive to unpack (*archive
 * 1) or a file to copy (0; always with no_unpack): by content, what
 * libarchive reads; by name, .tar, .tgz, .zip, .cpio, ... An archive
 * that cannot be read is an error, never a plain file: E3_ARCHIVE_NAME
 * (named as one, not one inside), E3_ARCHIVE_UNREADABLE (a format or
 * filter recognised, then damaged), or the errno of a failed read. */
errcode_t cp_source_kind(const char *path, int no_unpack, int *archive);
/* copyin_archive.c: an archive opened for reading (src NULL: stdin) with
 * the formats e3cp takes; an entry's xattrs and ACLs as they will be
 * stored. */
struct archive;
struct archive_entry;
errcode_t cp_archive_open(const char *src, struct archive **ret);
/* The same from fd, read from offset off (a spooled stdin). */
errcode_t cp_archive_open_fd(int fd, off_t off, struct archive **ret);
/* Standard input copied to an unlinked temporary file ($TMPDIR, else
 * /tmp), so that an archive read from it can be measured before it is
 * copied; a regular file on stdin is used as it is (dup'ed, from its
 * current offset). *fd: the copy, *off: where the archive starts. */
errcode_t cp_spool_stdin(int *fd, off_t *off);
/* (ACL names without a known id are given any id: for the measure) */
errcode_t cp_archive_xattrs(struct archive_entry *e, struct cp_xattrs *x);
/* copyin_acl.c: one POSIX ACL type of an archive entry added to x as a
 * system.posix_acl_* value with numeric ids (the rule is at the top of
 * copyin_acl.c; E3_ACL_UNKNOWN_NAME when a name has no id, unless
 * lenient, for the measure, which needs only the size); *mask (if not
 * NULL) gets the access ACL's mask. cp_acl_map_ids applies the uid and
 * gid maps to the named entries of such a value, in place. */
errcode_t cp_acl_from_archive(struct archive_entry *e, int type,
			      const char *name, struct cp_xattrs *x,
			      int *mask, int lenient);
int cp_acl_xattr_name(const char *name);
void cp_acl_map_ids(const struct e3_copyin_opts *o, unsigned char *value,
		    size_t size);
/* copyin_label.c: --file-contexts. open reads the file (an errno or
 * E3_FILE_CONTEXTS_BAD); cp_label_tree labels each of the n
 * destination paths (once each) and all under them, when everything is
 * copied (scanner only). */
errcode_t cp_label_open(const char *file, struct selabel_handle **ret);
void cp_label_close(struct selabel_handle *h);
errcode_t cp_label_tree(struct cp_ctx *c, const char *const *roots,
			size_t n);
/* (with c->label_need set, cp_label_tree labels nothing: it counts in
 * it an xattr block for each entry the image holds under the roots that
 * has none and whose inode has no room left for its label) */
/* copyin_zero.c: all-zero blocks of file data left as holes. A writer
 * for one file, fed chunks at increasing offsets; keep: everything
 * written as it comes (--keep-zeros). */
struct cp_zw {
	e3_file_t *f;
	unsigned bs;
	int keep;
	unsigned char *carry;		/* a block cut by a chunk's edge */
	uint64_t carry_off;
	size_t carry_len;
};
errcode_t cp_zw_init(struct cp_zw *z, e3_file_t *f, unsigned bs, int keep);
errcode_t cp_zw_write(struct cp_zw *z, const void *buf, size_t len,
		      uint64_t off);
/* Writes what is carried (call before the file's size is set). */
errcode_t cp_zw_finish(struct cp_zw *z);
void cp_zw_free(struct cp_zw *z);
/* 1 when n bytes at p are all zero. */
int cp_zero(const void *p, size_t n);
/* Where in buf (file offset off) the first whole image block of zeros
 * begins; len when there is none. */
size_t cp_zero_block_at(const void *buf, size_t len, uint64_t off,
			unsigned bs);
/* copyin_label.c: --file-contexts in the measure pass. The label of
 * the entry at rel (relative to the destination dest_path, "" the root):
 * the bytes it takes among an inode's xattrs (entry and value, as
 * copyin_size.c counts them; 0 when the file gives it none) and *id, its
 * index among the labels met (for cp_label_share). When an entry's only
 * xattr is its label and that does not fit in its inode, the blocks are
 * shared as the copy shares them (one per label per E3's refcount
 * limit): cp_label_share counts the entry instead of a block, and
 * cp_label_shared_blocks gives the sum. The tree measure runs on several
 * threads: lock guards h and the labels met. */
struct cp_lmeasure {
	struct selabel_handle *h;
	const char *root;		/* --selinux-root, or NULL */
	const char *dest_path;		/* the destination, "" or "/a/b" */
	pthread_mutex_t lock;
	struct cp_lshare {		/* [lock] */
		char *con;
		uint64_t n;		/* inodes whose block is only it */
	} *shared;
	size_t nshared, capshared;	/* [lock] */
	uint64_t blocks;		/* the image's entries (scanner) */
};
uint64_t cp_label_entry_bytes(struct cp_lmeasure *l, const char *rel,
			      uint32_t mode, size_t *id);
void cp_label_share(struct cp_lmeasure *l, size_t id);
uint64_t cp_label_shared_blocks(struct cp_lmeasure *l);
void cp_lmeasure_free(struct cp_lmeasure *l);
/* The blocks (0 or 1) an entry's xattrs take: others bytes of its own
 * (header and label not included), label bytes of its label (id: which).
 * A label alone in a block is counted as shared (cp_label_share). */
uint64_t cp_label_room(struct cp_lmeasure *l, unsigned inode_size,
		       uint64_t others, uint64_t label, size_t id);
/* copyin_archsize.c: what an archive file needs (cp_measure_tree's
 * counts for a tree), read once ahead of the copy; x (NULL: none) adds
 * e3cp's pieces: read from fd instead of src when fd >= 0 (stdin
 * spooled), each entry handed to the --overwrite/--update credit, and
 * each entry's label counted. */
struct cp_acredit;
struct cp_ameasure {
	int fd;				/* -1: src */
	off_t off;			/* where in fd the archive starts */
	struct cp_acredit *credit;	/* NULL: none */
	struct cp_lmeasure *label;	/* NULL: none */
};
errcode_t cp_measure_archive(const char *src, unsigned blocksize,
			     unsigned inode_size, int keep_zeros,
			     const struct cp_ameasure *x,
			     struct e3_copyin_need *need);

/* Owner maps, --owner and the SOURCE_DATE_EPOCH clamp applied to a
 * source's attributes. */
void cp_map_attr(struct cp_ctx *c, struct e3_attr *a);
void cp_attr_from_stat(struct e3_attr *a, const struct stat *st);

/* Where an entry goes: resolves rel (a relative path, already checked by
 * cp_path_clean) under the destination, creating missing directories with
 * default attributes; returns the parent and the last component.
 * Symlinks met on the way are refused (E3_PATH_ESCAPES). */
errcode_t cp_resolve_parent(struct cp_ctx *c, const char *rel,
			    ext2_ino_t *parent, const char **leaf);

/* Normalises an archive or device-table path in place: strips leading
 * "/" and "./", collapses "//" and "." components; refuses ".." anywhere
 * (E3_PATH_ESCAPES). An empty result means the destination itself. */
errcode_t cp_path_clean(char *path);

/* Entry creation (the engine, copyin.c). Each checks for an existing
 * entry: directories merge, other types are E3_NAME_EXISTS unless
 * --overwrite, in which case the old entry is removed first, or --update:
 * E3_UP_TO_DATE (c->want.ino the entry) when it matches c->want, else
 * removed as by --overwrite. */
errcode_t cp_make_dir(struct cp_ctx *c, ext2_ino_t parent, const char *name,
		      const struct e3_attr *a, const char *path,
		      ext2_ino_t *ino, int *created);
errcode_t cp_prepare_name(struct cp_ctx *c, ext2_ino_t parent,
			  const char *name, const char *path);
errcode_t cp_set_xattrs(struct cp_ctx *c, ext2_ino_t ino,
			const struct cp_xattrs *x, const char *path);
/* A file, symlink or device just made whose copy failed over the entry
 * itself (why: its xattrs do not fit): removed again, so that no entry
 * looks copied that is not; returns why (or the removal's error). */
errcode_t cp_unmake(struct cp_ctx *c, ext2_ino_t parent, const char *name,
		    errcode_t why);
errcode_t cp_defer_dirattr(struct cp_ctx *c, ext2_ino_t ino,
			   const struct e3_attr *a);
void cp_count_file(struct cp_ctx *c, uint64_t bytes, const char *path);
/* The same with stat_lock held. */
void cp_count_file_locked(struct cp_ctx *c, uint64_t bytes);

/* openat (+O_CLOEXEC) without touching the source's atime when allowed:
 * O_NOATIME is asked for unless *latch is 0, and a refusal clears it. */
int cp_openat(int dirfd, const char *name, int flags, int *latch);

/* qsort comparator for an array of char *. */
int cp_strcmp_ptr(const void *a, const void *b);
/* Sorts an entry's error into "report and go on" (returns 0, counted as
 * an error) and "stop" (returned). */
errcode_t cp_entry_result(struct cp_ctx *c, const char *path, errcode_t err);
/* 1: an error of the entry itself (reported, the copy goes on). */
int cp_entry_error(errcode_t err);

/* A batch goes to the workers at this many files or bytes. */
#define CP_BATCH_FILES 16
#define CP_BATCH_BYTES (1u << 20)

/* Hands the files created so far to the workers. */
errcode_t cp_flush_batch(struct cp_ctx *c);
/* Every file created so far closed (ordered mode: by the scanner, in
 * creation order; else by the workers, waited for). Scanner only. */
errcode_t cp_drain(struct cp_ctx *c);
/* Ordered mode: closes the oldest open files until at most keep remain. */
errcode_t cp_close_oldest(struct cp_ctx *c, size_t keep);

/* The time given to what the input makes but does not date (implied
 * directories, device table entries): SOURCE_DATE_EPOCH, else the image's
 * fixed clock (--reproducible alone: 0), else now. */
void cp_now(const struct cp_ctx *c, struct timespec *ts);

/* The walkers. src NULL for the archive walker: stdin. */
errcode_t cp_tree_copy(struct cp_ctx *c, const char *src, ext2_ino_t dest);
/* Frees the file jobs kept in c->job_pool (teardown: no job running). */
void cp_tree_jobs_free(struct cp_ctx *c);
errcode_t cp_archive_copy(struct cp_ctx *c, const char *src, ext2_ino_t dest);

/* A device table is read whole before anything is written, so that a
 * bad line stops the copy before it starts; applied after the sources. */
struct cp_devtab {
	struct cp_devtab_entry *e;	/* e[i].path allocated */
	size_t n;
};
errcode_t cp_devtab_load(const char *file, struct cp_devtab *t,
			 unsigned *line);
errcode_t cp_devtab_apply(struct cp_ctx *c, const struct cp_devtab *t);
void cp_devtab_free(struct cp_devtab *t);

/* Device table lines (genext2fs format), parsed. */
struct cp_devtab_entry {
	char *path;			/* as written */
	char type;			/* f d c b p s */
	uint32_t mode;			/* permission bits (07777) */
	uint32_t uid, gid;
	uint32_t major, minor;		/* devices only */
	uint32_t start, inc, count;	/* count 0: a single entry */
	int has_count;
};
/* Parses one line; *skip set for blank and comment lines. line_no for the
 * caller's message only. */
errcode_t cp_devtab_parse_line(char *line, struct cp_devtab_entry *e,
			       int *skip);

/* htree.c: at most how many blocks e2fsck's indexed layout (the one
 * e3_htree_build_all writes) gives a directory whose entries, "." and ".."
 * left out, take bytes at their minimal record lengths, the longest being
 * rmax: leaf order depends on the hash seed, so this is a bound. */
uint64_t cp_htree_blocks_max(unsigned blocksize, uint64_t bytes,
			     unsigned rmax);

/* What the copy uses of a struct stat, packed: a listing holds one per
 * source entry from the measure pass until the copy gets there, and the
 * 144 bytes of a struct stat were most of a copy's memory per file. */
struct cp_stat {
	uint64_t dev, ino, rdev;
	int64_t size, blocks;
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint32_t mode, nlink, uid, gid;
};
void cp_stat_pack(struct cp_stat *p, const struct stat *st);
/* st's other fields are zero */
void cp_stat_unpack(struct stat *st, const struct cp_stat *p);

/* One entry of a source directory, as the measure pass saw it. */
struct cp_dent {
	const char *name;		/* in the listing's arena */
	struct cp_stat st;
	uint32_t name_off;
	int stat_err;			/* fstatat failed: skipped with this */
	unsigned char no_xattrs;	/* it listed no extended attribute */
	unsigned char measured;		/* the fields above are set */
	unsigned char counted;		/* the measure counted its inode (a
					   hard link met before: not) */
	uint32_t need_blocks;		/* blocks the measure counted for it */
};

/* A source directory's entries, sorted bytewise (copyin_listing.c). */
struct cp_listing {
	uint64_t dev, ino;		/* the directory */
	size_t bytes;			/* memory it holds */
	size_t n;
	struct cp_dent *e;
	char *names;
	struct cp_listing *next;	/* table chain */
};
struct cp_listings;

/* Listings kept for the copy pass hold at most this much memory; past
 * it, directories are read a second time (about 2 million entries). */
#define CP_LISTING_BUDGET ((size_t)256 << 20)

/* Reads the directory open at fd (its entries unmeasured). */
errcode_t cp_listing_read(int fd, struct cp_listing **ret);
void cp_listing_free(struct cp_listing *l);
errcode_t cp_listings_create(struct cp_listings **ret);
void cp_listings_free(struct cp_listings *t);
/* Thread-safe. put hands l over; take removes and returns the listing of
 * directory (dev, ino), or NULL. */
void cp_listings_put(struct cp_listings *t, struct cp_listing *l);
struct cp_listing *cp_listings_take(struct cp_listings *t, uint64_t dev,
				    uint64_t ino);
/* Like take, but the listing stays in the table (for the --overwrite
 * credit, before the copy pass takes them). */
struct cp_listing *cp_listings_find(struct cp_listings *t, uint64_t dev,
				    uint64_t ino);

/* --overwrite (copyin_credit.c): what replacing the image's entries of
 * the same path gives back, per entry never more than the measure counted
 * for its replacement, added to *credit; 0 for whatever is not found. */
errcode_t cp_overwrite_credit(struct cp_ctx *c, const char *src,
			      const char *to, struct e3_copyin_need *credit);
/* The destination directory dest names, if it exists (0 if not):
 * looked up without making anything. */
ext2_ino_t cp_find_dest(struct cp_ctx *c, const char *dest);
/* --overwrite and --update for an archive: the archive measure
 * (copyin_archsize.c) hands each entry to cp_acredit_entry, which credits
 * the image's entry at the same path under dest as cp_overwrite_credit
 * does for a tree (need_blocks: what the measure counted for the entry;
 * link: a hard link, which makes no inode). Nothing of the archive is
 * kept; the image inodes credited are, so each is credited once. */
struct cp_acredit {
	struct cp_ctx *c;
	ext2_ino_t dest;		/* 0: nothing there to credit */
	struct e3_copyin_need credit;	/* the sum */
	ext2_ino_t *set;		/* credited image inodes (hashed) */
	size_t nset, capset;
	char *last_path;		/* the last parent looked up */
	ext2_ino_t last_ino;
};
void cp_acredit_entry(struct cp_acredit *a, const char *rel, int is_dir,
		      int link, uint64_t need_blocks);
void cp_acredit_free(struct cp_acredit *a);
/* After a removal: blocks freed by the running transaction become
 * reusable only when it commits; commit now when they are waiting and
 * fewer than want blocks are free (want = UINT64_MAX: whenever any wait). */
errcode_t cp_release_freed(struct cp_ctx *c, uint64_t want);

/* Blocks and inodes a source tree (or file) needs in an image, read by
 * `threads` threads. With keep, every directory's measured listing is
 * left there for the copy pass. */
errcode_t cp_measure_tree(const char *src, unsigned blocksize,
			  unsigned inode_size, unsigned threads,
			  struct cp_listings *keep, struct cp_lmeasure *label,
			  struct e3_copyin_need *need);
/* Indirect blocks needed to map data blocks [first, first+count). Call per
 * data run, in increasing order, with the same state: shared indirect
 * blocks are counted once. */
struct cp_ind_state {
	uint64_t last_ind, last_dind, last_tind;	/* +1; 0 none */
};
uint64_t cp_ind_blocks(unsigned blocksize, uint64_t first, uint64_t count,
		       struct cp_ind_state *s);
/* Data and indirect blocks of a file's data regions [start, end) in
 * bytes, added in increasing order (edges inside one block count once). */
struct cp_regions {
	struct cp_ind_state ind;
	uint64_t n, last;
};
void cp_regions_add(struct cp_regions *r, unsigned bs, uint64_t start,
		    uint64_t end);
/* Data and indirect blocks a file with holes takes once copied: its data
 * regions (SEEK_DATA/SEEK_HOLE, as the copy finds them) up to size. */
uint64_t cp_sparse_blocks(int fd, unsigned bs, uint64_t size);
/* The next data region at or after off of a file of size bytes, as the
 * copy (copy_regions) and the measure (cp_sparse_blocks) both walk it,
 * so the window booked is what the copy writes: 0 with [*data, *hole),
 * 1 at the end. Where SEEK_DATA does not work the rest is one region. */
int cp_next_region(int fd, off_t off, uint64_t size, off_t *data,
		   off_t *hole);
/* 0 or 1: the xattr block that need bytes of entries (header included)
 * take when they do not fit in an inode of inode_size bytes (after the
 * 32 extra bytes mke2fs asks for). */
uint64_t cp_xattr_room_blocks(unsigned inode_size, uint64_t need);
/* E3_XATTR_TOO_BIG when xattrs of need bytes so counted, the largest
 * entry taking largest of them, cannot fit an inode of inode_size bytes
 * and one block of bs bytes whatever the packing. */
errcode_t cp_xattr_check(unsigned bs, unsigned inode_size, uint64_t need,
			 uint64_t largest);

#endif
