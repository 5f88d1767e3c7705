/*
 * copyin_acl.c: POSIX ACLs on their way into the image — an archive
 * entry's ACLs (libarchive's archive_entry_acl_*) as system.posix_acl_*
 * values with numeric ids, and the --uid-map/--gid-map applied to the
 * ids inside such values, whoever made them (libarchive, an archive's
 * raw xattrs, a source tree). The value is Linux's xattr form (version
 * 2, 8-byte entries); e3_setxattr turns it into ext3's on-disk form.
 *
 * Ids: GNU tar --acls writes names only ("user:jdoe:rwx"), so libarchive
 * hands us id -1 with the name. A numeric id the archive gives wins (star
 * writes one), then a name that is all digits, then the entry's own
 * uname/gname (the archive's own word for that id), then this host's
 * user and group databases, which is what GNU tar -x does.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <archive.h>
#include <archive_entry.h>

#include "copyin.h"

#define XACL_VERSION	2
#define XACL_USER_OBJ	0x01
#define XACL_USER	0x02
#define XACL_GROUP_OBJ	0x04
#define XACL_GROUP	0x08
#define XACL_MASK	0x10
#define XACL_OTHER	0x20
#define XACL_UNDEF_ID	0xffffffffu
#define XACL_MAX	512		/* entries; more is not a real ACL */

struct xacl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static int xacl_cmp(const void *x, const void *y)
{
	const struct xacl_entry *a = x, *b = y;

	if (a->tag != b->tag)
		return a->tag < b->tag ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static uint16_t xacl_tag(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ: return XACL_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER: return XACL_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ: return XACL_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP: return XACL_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK: return XACL_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER: return XACL_OTHER;
	default: return 0;
	}
}

/* "1000" -> 1000; anything else (empty, signs, > 32 bits, -1): no. */
static int numeric_id(const char *s, uint32_t *id)
{
	unsigned long long v = 0;

	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (unsigned)(*s - '0');
		if (v >= XACL_UNDEF_ID)
			return 0;
	}
	*id = (uint32_t)v;
	return 1;
}

/* The host's id for a user (user != 0) or group name; 0 when unknown. */
static int host_id(const char *name, int user, uint32_t *id)
{
	char buf[4096];
	struct passwd pw, *pwr = NULL;
	struct group gr, *grr = NULL;

	if (user) {
		if (getpwnam_r(name, &pw, buf, sizeof(buf), &pwr) || !pwr)
			return 0;
		*id = pwr->pw_uid;
	} else {
		if (getgrnam_r(name, &gr, buf, sizeof(buf), &grr) || !grr)
			return 0;
		*id = grr->gr_gid;
	}
	return 1;
}

/* A named entry's numeric id, by the rule at the top. */
static errcode_t entry_id(struct archive_entry *e, int user, int id,
			  const char *who, uint32_t *ret)
{
	const char *own = user ? archive_entry_uname(e) : archive_entry_gname(e);

	if (id >= 0) {
		*ret = (uint32_t)id;
		return 0;
	}
	if (numeric_id(who, ret))
		return 0;
	if (who && own && strcmp(who, own) == 0) {
		*ret = (uint32_t)(user ? archive_entry_uid(e) :
					 archive_entry_gid(e));
		return 0;
	}
	if (who && host_id(who, user, ret))
		return 0;
	return E3_ACL_UNKNOWN_NAME;
}

errcode_t cp_acl_from_archive(struct archive_entry *e, int type,
			      const char *name, struct cp_xattrs *x,
			      int *mask, int lenient)
{
	struct xacl_entry v[XACL_MAX];
	unsigned char buf[4 + sizeof(v)];
	int etype, perm, tag, id, n = 0, extended = 0;
	const char *who;
	errcode_t err;
	size_t len;

	if (archive_entry_acl_reset(e, type) <= 0)
		return 0;
	while (n < XACL_MAX && archive_entry_acl_next(e, type, &etype, &perm,
						      &tag, &id, &who) ==
	       ARCHIVE_OK) {
		uint16_t t = xacl_tag(tag);

		if (!t || etype != type)
			continue;
		if (t == XACL_USER || t == XACL_GROUP || t == XACL_MASK)
			extended = 1;
		if (t == XACL_MASK && mask)
			*mask = perm & 7;
		v[n].tag = t;
		v[n].perm = (uint16_t)(perm & 7);
		v[n].id = XACL_UNDEF_ID;
		if (t == XACL_USER || t == XACL_GROUP) {
			err = entry_id(e, t == XACL_USER, id, who, &v[n].id);
			/* the measure only needs the size: any id will do */
			if (err && !lenient)
				return err;
		}
		n++;
	}
	if (n == 0 || (type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS && !extended))
		return 0;
	qsort(v, (size_t)n, sizeof(*v), xacl_cmp);
	buf[0] = XACL_VERSION; buf[1] = buf[2] = buf[3] = 0;
	len = 4;
	for (int i = 0; i < n; i++) {
		unsigned char *p = buf + len;

		p[0] = v[i].tag & 0xff; p[1] = v[i].tag >> 8;
		p[2] = v[i].perm & 0xff; p[3] = v[i].perm >> 8;
		p[4] = v[i].id & 0xff; p[5] = (v[i].id >> 8) & 0xff;
		p[6] = (v[i].id >> 16) & 0xff; p[7] = v[i].id >> 24;
		len += 8;
	}
	return cp_xattrs_add(x, name, buf, len);
}

int cp_acl_xattr_name(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

static uint32_t map_one(const struct e3_idmap *m, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].from == id)
			return m[i].to;
	return id;
}

void cp_acl_map_ids(const struct e3_copyin_opts *o, unsigned char *v,
		    size_t size)
{
	/* a malformed value is left for e3_setxattr to refuse */
	if (size < 4 || (size - 4) % 8 || v[0] != XACL_VERSION)
		return;
	for (size_t off = 4; off < size; off += 8) {
		unsigned char *p = v + off;
		uint16_t tag = (uint16_t)(p[0] | p[1] << 8);
		uint32_t id = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		if (tag == XACL_USER)
			id = map_one(o->uid_map, o->n_uid_map, id);
		else if (tag == XACL_GROUP)
			id = map_one(o->gid_map, o->n_gid_map, id);
		else
			continue;
		p[4] = id & 0xff; p[5] = (id >> 8) & 0xff;
		p[6] = (id >> 16) & 0xff; p[7] = id >> 24;
	}
}
