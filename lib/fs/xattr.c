/*
 * xattr.c: extended attributes and POSIX ACLs.
 *
 * libext2fs' ext2fs_xattr_* does most of the job and is used as is: it
 * puts attributes in the inode's extra space while they fit and the rest
 * in an EA block (entries sorted as the kernel sorts them, entry hashes
 * set), converts system.posix_acl_* from the Linux xattr format to
 * ext3's on-disk ACL format, and copies a shared EA block on write
 * (refcount > 1 → new block, old refcount - 1). What it does not do is the
 * kernel's other half of sharing: it never looks for an existing identical
 * block, so every inode would get its own. That part is here: after each
 * write, a block whose twin is already on disk (same h_hash, same bytes
 * after the header, refcount below the kernel's 1024) is dropped and the
 * inode points at the twin, whose refcount goes up. The candidate blocks
 * are remembered per image by the block hash (which ext2fs leaves 0, so
 * it is computed here as the kernel does; struct e3_load.ea, under
 * fs_lock) and re-read and compared before use, so a stale entry is harmless.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ext2fs/ext2_ext_attr.h>

#include "load_int.h"
#include "alloc/alloc.h"
#include "journal/journal.h"

/* the kernel's EXT3_XATTR_REFCOUNT_MAX */
#define E3_EA_REFCOUNT_MAX 1024

/* Linux xattr ACL format (acl/libacl's posix_acl_xattr_*): little-endian. */
#define ACL_XATTR_VERSION 2
enum { ACL_USER_OBJ_ = 1, ACL_USER_ = 2, ACL_GROUP_OBJ_ = 4, ACL_GROUP_ = 8,
       ACL_MASK_ = 0x10, ACL_OTHER_ = 0x20 };

static errcode_t check_acl(const void *value, size_t size)
{
	const unsigned char *p = value;
	size_t n;

	if (!value || size < 4 || (size - 4) % 8 != 0 || size == 4)
		return E3_BAD_ACL;
	if ((uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) !=
	    ACL_XATTR_VERSION)
		return E3_BAD_ACL;
	n = (size - 4) / 8;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *e = p + 4 + i * 8;
		unsigned tag = e[0] | e[1] << 8, perm = e[2] | e[3] << 8;

		if (perm & ~7u)
			return E3_BAD_ACL;
		switch (tag) {
		case ACL_USER_OBJ_: case ACL_USER_: case ACL_GROUP_OBJ_:
		case ACL_GROUP_: case ACL_MASK_: case ACL_OTHER_:
			break;
		default:
			return E3_BAD_ACL;
		}
	}
	return 0;
}

static errcode_t check_xattr_name(const char *name)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security." };
	size_t len;

	if (!name)
		return E3_BAD_XATTR_NAME;
	if (strcmp(name, "system.posix_acl_access") == 0 ||
	    strcmp(name, "system.posix_acl_default") == 0)
		return 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++) {
		len = strlen(prefixes[i]);
		if (strncmp(name, prefixes[i], len) == 0) {
			if (name[len] == '\0')
				return E3_BAD_XATTR_NAME;
			if (strlen(name + len) > 255)
				return E3_NAME_TOO_LONG;
			return 0;
		}
	}
	return E3_BAD_XATTR_NAME;
}

/* ---- the sharing cache --------------------------------------------------- */

static struct e3_ea_share **bucket(struct e3_load *l, uint32_t hash)
{
	return &l->ea[hash % E3_EA_SHARE_BUCKETS];
}

static void share_forget(struct e3_load *l, blk64_t blk)
{
	for (unsigned i = 0; i < E3_EA_SHARE_BUCKETS; i++)
		for (struct e3_ea_share **pp = &l->ea[i]; *pp; pp = &(*pp)->next)
			if ((*pp)->blk == blk) {
				struct e3_ea_share *s = *pp;

				*pp = s->next;
				free(s);
				return;
			}
}

static errcode_t share_remember(struct e3_load *l, uint32_t hash, blk64_t blk)
{
	struct e3_ea_share *s = malloc(sizeof(*s)), **b = bucket(l, hash);

	if (!s)
		return ENOMEM;
	s->hash = hash;
	s->blk = blk;
	s->next = *b;
	*b = s;
	return 0;
}

/* A block on disk identical to buf (bytes after the header), with room
 * for one more reference; 0 if none. */
static blk64_t share_find(ext2_filsys fs, struct e3_load *l, blk64_t self,
			  const char *buf, char *tmp)
{
	const struct ext2_ext_attr_header *h = (const void *)buf;
	size_t hl = sizeof(struct ext2_ext_attr_header);

	for (struct e3_ea_share *s = *bucket(l, h->h_hash); s; s = s->next) {
		const struct ext2_ext_attr_header *th = (const void *)tmp;

		if (s->hash != h->h_hash || s->blk == self)
			continue;
		if (!ext2fs_test_block_bitmap2(fs->block_map, s->blk))
			continue;
		if (ext2fs_read_ext_attr3(fs, s->blk, tmp, 0))
			continue;
		if (th->h_magic != EXT2_EXT_ATTR_MAGIC || th->h_blocks != 1 ||
		    th->h_hash != h->h_hash ||
		    th->h_refcount >= E3_EA_REFCOUNT_MAX)
			continue;
		if (memcmp(buf + hl, tmp + hl, fs->blocksize - hl) == 0)
			return s->blk;
	}
	return 0;
}

/* The allocator's stats hook turns the libext2fs free into a deferred
 * free (reusable after the commit). */
static void free_ea_block(struct e3_image *img, blk64_t blk)
{
	ext2fs_block_alloc_stats2(img->fs, blk, -1);
	if (img->journal)
		e3_journal_revoke(img->journal, blk);
}

/* After ext2fs wrote ino's attributes: share its EA block with an
 * identical one if there is one, else offer it for sharing. */
static errcode_t share_block(struct e3_image *img, ext2_ino_t ino,
			     blk64_t old_blk)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode_large *inode = e3_inode_alloc(fs);
	char *buf = NULL, *tmp = NULL;
	struct ext2_ext_attr_header *h;
	blk64_t blk, twin;
	errcode_t err;

	if (!inode)
		return ENOMEM;
	err = ext2fs_read_inode_full(fs, ino, EXT2_INODE(inode),
				     EXT2_INODE_SIZE(fs->super));
	if (err)
		goto out;
	blk = ext2fs_file_acl_block(fs, EXT2_INODE(inode));
	if (old_blk && old_blk != blk &&
	    !ext2fs_test_block_bitmap2(fs->block_map, old_blk)) {
		/* ext2fs freed the old block (attributes moved in-inode) */
		share_forget(img->load, old_blk);
		if (img->journal)
			e3_journal_revoke(img->journal, old_blk);
	}
	if (!blk)
		goto out;
	err = ext2fs_get_mem(fs->blocksize, &buf);
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &tmp);
	if (err)
		goto out;
	err = ext2fs_read_ext_attr3(fs, blk, buf, ino);
	if (err)
		goto out;
	h = (struct ext2_ext_attr_header *)buf;
	if (h->h_refcount != 1)
		goto out;	/* already shared */
	if (h->h_hash == 0) {
		/* ext2fs_xattrs_write hashes the entries, not the block;
		 * the kernel's sharing keys on the block hash */
		ext2fs_ext_attr_block_rehash(h, (struct ext2_ext_attr_entry *)
					     (buf + fs->blocksize));
		if (h->h_hash == 0)
			goto out;	/* an entry without hash: not shareable */
		err = ext2fs_write_ext_attr3(fs, blk, buf, ino);
		if (err)
			goto out;
	}
	twin = share_find(fs, img->load, blk, buf, tmp);
	if (!twin) {
		share_forget(img->load, blk);
		err = share_remember(img->load, h->h_hash, blk);
		goto out;
	}
	err = ext2fs_adjust_ea_refcount3(fs, twin, tmp, +1, NULL, ino);
	if (err)
		goto out;
	ext2fs_file_acl_block_set(fs, EXT2_INODE(inode), twin);
	err = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				      EXT2_INODE_SIZE(fs->super));
	if (err) {
		/* the inode cache holds the twin pointer already */
		e3_undo_begin(img);
		ext2fs_adjust_ea_refcount3(fs, twin, tmp, -1, NULL, ino);
		goto out;
	}
	share_forget(img->load, blk);
	free_ea_block(img, blk);
out:
	ext2fs_free_mem(&buf);
	ext2fs_free_mem(&tmp);
	free(inode);
	return err;
}

static errcode_t do_setxattr(struct e3_image *img, ext2_ino_t ino,
			     const char *name, const void *value, size_t size)
{
	ext2_filsys fs = img->fs;
	struct ext2_xattr_handle *h = NULL;
	struct ext2_inode inode;
	blk64_t old_blk;
	errcode_t err;

	if (ino < EXT2_ROOT_INO || ino > fs->super->s_inodes_count)
		return E3_NOT_FOUND;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (inode.i_links_count == 0)
		return E3_NOT_FOUND;
	old_blk = ext2fs_file_acl_block(fs, &inode);
	err = ext2fs_xattrs_open(fs, ino, &h);
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_set(h, name, value, size);
	ext2fs_xattrs_close(&h);
	if (err)
		return e3_map_err(err);
	return share_block(img, ino, old_blk);
}

errcode_t e3_setxattr(e3_image_t *img, ext2_ino_t ino, const char *name,
		      const void *value, size_t size)
{
	errcode_t err, err2;

	if ((err = e3_check_writable(img)))
		return err;
	err = check_xattr_name(name);
	if (err)
		return err;
	if (strncmp(name, "system.posix_acl_", 17) == 0) {
		err = check_acl(value, size);
		if (err)
			return err;
	}
	if (size && !value)
		return EINVAL;
	e3_fs_lock(img);
	if (size > img->fs->blocksize)
		err = E3_XATTR_TOO_BIG;
	else
		err = do_setxattr(img, ino, name, value, size);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}
