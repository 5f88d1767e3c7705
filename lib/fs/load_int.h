/*
 * load_int.h: what lib/load's own files (load.c, namei.c, file.c,
 * blockmap.c, xattr.c) share: the per-image load state and the inode and
 * directory helpers every "create something" operation uses. Private to
 * lib/; tools never include it.
 */
#ifndef E3_LOAD_INT_H
#define E3_LOAD_INT_H

#include <sys/queue.h>
#include "image.h"

/* ext3's limit on i_links_count (EXT3_LINK_MAX). */
#define E3_LINK_MAX 32000

/* One EA block that may be shared by inodes with identical attributes. */
struct e3_ea_share {
	uint32_t hash;			/* h_hash of the block */
	blk64_t blk;
	struct e3_ea_share *next;
};

#define E3_EA_SHARE_BUCKETS 256

struct e3_file;

/* Per-image load state. */
#define E3_LOAD_FILE_BUCKETS 256	/* a power of two */
#if defined(__SANITIZE_ADDRESS__)
#define E3_LOAD_POOL 0		/* ASan builds: every use after close shows */
#else
#define E3_LOAD_POOL 64
#endif
#define E3_LOAD_POOL_BUF (64u << 10)

struct e3_load {
	pthread_mutex_t lock;		/* guards the open-file list and the
					   pool of closed files' structs; a
					   leaf: nothing is taken under it */
	/* [lock] files created, not closed, hashed by inode number: the
	 * "is it open" question of every unlink and rename must not walk
	 * all of them (mixload keeps 4 streams open per client: 256 at 64
	 * clients) */
	TAILQ_HEAD(e3_file_list, e3_file) files[E3_LOAD_FILE_BUCKETS];
	unsigned nfiles;		/* [lock] */
	/* [lock] closed files' structs, each with its write buffer as the
	 * next user's read buffer (file.c file_new/file_keep): a calloc,
	 * a buffer's malloc and three frees per small file showed in
	 * copy-in profiles. At most E3_LOAD_POOL, buffers of at most
	 * E3_LOAD_POOL_BUF bytes: 4 MiB. */
	struct e3_file *pool;
	unsigned npool;
	/* [fs_lock] files created whose close has not yet given the inode
	 * its data: while any is, operations end without a timed commit
	 * (e3_op_end), so that a replay never shows one of their names
	 * with less than all of its data */
	unsigned unfinished;
	struct e3_ea_share *ea[E3_EA_SHARE_BUCKETS]; /* [fs_lock] */
	size_t write_buffer;		/* bytes per file write-behind buffer,
					   E3_WRITE_BUFFER or 1 MiB; fixed */
	struct e3_dcache *dcache;	/* [fs_lock] dircache.c */
};

/* dircache.c: names and free room of the directories names are added to.
 * All under fs_lock. */
/* e3_dir_find, answered from the cache when it covers dir: an absent
 * hash without reading anything, a present one in the name's block. */
errcode_t e3_dc_find(struct e3_image *img, ext2_ino_t dir, const char *name,
		     ext2_ino_t *ino, blk64_t *lblk);
/* e3_dc_find with dir's inode as the caller read it just now under the
 * same fs_lock hold (NULL: read it): one read of it less per name. */
errcode_t e3_dc_find_known(struct e3_image *img, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t *ino, blk64_t *lblk);
/* Adds the entry where ext2fs_link would. *handled = 0: the cache does not
 * cover dir, use ext2fs_link. EXT2_ET_DIR_NO_SPACE: grow dir first. */
errcode_t e3_dc_link(struct e3_image *img, ext2_ino_t dir, const char *name,
		     ext2_ino_t ino, int ft, int *handled);
/* e3_dc_link with dir's inode as read under this fs_lock hold (NULL:
 * read it). */
errcode_t e3_dc_link_known(struct e3_image *img, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t ino, int ft, int *handled);
/* A name was removed from dir (or its blocks rewritten): read it again
 * when next needed. */
void e3_dc_forget(struct e3_image *img, ext2_ino_t dir);
/* The cache's copy of the last directory block it wrote is not to be
 * trusted any more (an undo, blocks freed): it reads the block again. */
void e3_dc_drop_block(struct e3_image *img);
/* Every block dir's map names is its own (e3_block_owned), checked once
 * per directory and image session: else E3_FILE_BLOCKS_BAD. For the
 * directories whose blocks libext2fs writes (indexed ones, those the
 * cache leaves to it, htree rebuilds, removals), before it writes. */
errcode_t e3_dc_dir_owned(struct e3_image *img, ext2_ino_t dir);
/* name was removed from directory block lblk by e3_dir_unlink_at. */
void e3_dc_unlinked(struct e3_image *img, ext2_ino_t dir, const char *name,
		    blk64_t lblk);
void e3_dc_free(struct e3_image *img);

/* Registers/unregisters an open file so that image close can tell. */
void e3_load_file_add(struct e3_image *img, struct e3_file *f);
void e3_load_file_del(struct e3_image *img, struct e3_file *f);
/* e3_load_file_del of files[0..n) (all of img) in one hold of the lock,
 * each (closed, its lock released, nothing left but its read buffer)
 * kept in the pool while it has room: kept[i] 1, else the caller frees
 * it. */
void e3_load_files_del_keep(struct e3_image *img, struct e3_file **files,
			    size_t n, unsigned char *kept);
/* A struct from the pool, NULL when it is empty. */
struct e3_file *e3_load_file_reuse(struct e3_image *img);
/* Whether a file of inode ino was created and not closed yet (its blocks
 * and size are committed at close). */
int e3_load_file_is_open(struct e3_image *img, ext2_ino_t ino);

/* End of one atomic operation: gives the journal its commit point.
 * Caller holds fs_lock. */
errcode_t e3_op_end(struct e3_image *img);

/* An operation's error path: call first, before undoing. A write that
 * failed inside libext2fs left its inode cache ahead of what reached the
 * image (or the running transaction); the undo must work from the latter.
 * Caller holds fs_lock. */
void e3_undo_begin(struct e3_image *img);

/* The undo of a failed operation failed too (err: the operation's first
 * error): the half-done operation must never reach the image. With a
 * journal the running transaction is dropped (the image stays as of the
 * last commit; every later write of the session fails, and close returns
 * err). Without one, what is written stays: the superblock is marked
 * "errors" (EXT2_ERROR_FS), as the kernel does, so e2fsck checks it.
 * Caller holds fs_lock. */
void e3_op_poison(struct e3_image *img, errcode_t err);

/* E3_IMAGE_READONLY unless img was opened for writing. */
errcode_t e3_check_writable(struct e3_image *img);

/* "" "." ".." or a '/' → E3_BAD_NAME; > 255 bytes → E3_NAME_TOO_LONG. */
errcode_t e3_check_name(const char *name);

/* Parent must be a directory that does not hold name yet; with
 * links_needed, the parent also gains a link (mkdir) and must stay within
 * E3_LINK_MAX. Caller holds fs_lock. */
errcode_t e3_check_new_entry(ext2_filsys fs, ext2_ino_t parent,
			     const char *name, int links_needed);
/* The same, the parent's inode as read for the check into *pi. */
errcode_t e3_check_new_entry_pi(ext2_filsys fs, ext2_ino_t parent,
				const char *name, int links_needed,
				struct ext2_inode *pi);

/* Adds name → ino (file type from mode) to dir, growing the directory by
 * a block when it is full. Caller holds fs_lock. */
errcode_t e3_dir_add(ext2_filsys fs, ext2_ino_t dir, const char *name,
		     ext2_ino_t ino, uint32_t mode);
/* e3_dir_add with dir's inode as the caller read it under this fs_lock
 * hold, nothing having written it since (NULL: read it): the directory
 * cache's first look uses it instead of reading it again. */
errcode_t e3_dir_add_known(ext2_filsys fs, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t ino, uint32_t mode);

/* Fills mode, owner and times (with nanoseconds where the inode has room)
 * from attr; keeps everything else. */
void e3_inode_set_attr(ext2_filsys fs, struct ext2_inode_large *inode,
		       const struct e3_attr *attr);

/* A fresh inode of the image's inode size: zeroed, attributes set,
 * extra size set for large inodes. */
void e3_inode_init(ext2_filsys fs, struct ext2_inode_large *inode,
		   const struct e3_attr *attr, uint16_t links);

/* A zeroed buffer big enough for one on-disk inode and for
 * struct ext2_inode_large; free() it. */
struct ext2_inode_large *e3_inode_alloc(ext2_filsys fs);

/* The common start of every new entry: checks name in parent (see
 * e3_check_new_entry; a directory needs a parent link), allocates the
 * inode number (e3_ialloc) and a buffer initialised from attr with links
 * links. On success the caller owns *inode (free() it) and must either
 * write the inode or give the number back with e3_ifree. Caller holds
 * fs_lock. */
errcode_t e3_inode_new(struct e3_image *img, ext2_ino_t parent,
		       const char *name, const struct e3_attr *attr,
		       uint16_t links, struct ext2_inode_large **inode,
		       ext2_ino_t *ino);

/* e3_inode_new into the caller's buffer, which must hold
 * max(EXT2_INODE_SIZE, sizeof(struct ext2_inode_large)) bytes: the path
 * that makes a regular file per source file keeps it on the stack (a
 * calloc and a free per file showed in copy-in profiles). */
errcode_t e3_inode_new_in(struct e3_image *img, ext2_ino_t parent,
			  const char *name, const struct e3_attr *attr,
			  uint16_t links, struct ext2_inode_large *inode,
			  ext2_ino_t *ino);
/* e3_inode_new_in, the parent's inode as its check read it into *pi
 * (for e3_dir_add_known: nothing here writes the parent's inode). */
errcode_t e3_inode_new_in_pi(struct e3_image *img, ext2_ino_t parent,
			     const char *name, const struct e3_attr *attr,
			     uint16_t links, struct ext2_inode_large *inode,
			     ext2_ino_t *ino, struct ext2_inode *pi);

/* Maps libext2fs' "not found" style codes to ours. */
errcode_t e3_map_err(errcode_t err);

/* Gives back an inode that e3_ialloc handed out and that never got a
 * directory entry. Caller holds fs_lock. */
void e3_ifree(ext2_filsys fs, ext2_ino_t ino, int is_dir);

/* remove.c: an inode whose last link has gone — its blocks (data,
 * indirect; its EA block when no other inode shares it) and the inode
 * itself are freed, dtime stamped; a directory's size is zeroed. The map
 * must have been checked (e3_map_owned) first. On error it is half done:
 * the caller poisons the operation. Caller holds fs_lock. */
/* The blocks freeing ino would free are all its own (remove.c): 0, or
 * E3_FILE_BLOCKS_BAD (its map names metadata, the journal, a free block,
 * one block twice, or its EA block is not one). Caller holds fs_lock. */
errcode_t e3_inode_owns_blocks(struct e3_image *img, ext2_ino_t ino,
			       struct ext2_inode *inode);
errcode_t e3_inode_release(struct e3_image *img, ext2_ino_t ino,
			   struct ext2_inode *inode, int is_dir);

#endif
