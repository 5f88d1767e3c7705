/*
 * copyin_listing.c: what the measure pass saw of each source directory —
 * its names, sorted, and each entry's stat — kept until the copy pass
 * gets there, so that the tree is listed and stat'ed once, not twice (the
 * second time on the thread every other one waits for). Found by the
 * directory's device and inode; a directory not found (not measured,
 * replaced since, met twice) is simply read again.
 *
 * The table is filled by the measure threads and emptied by the copy
 * pass; its own lock guards the buckets.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copyin.h"

#define NBUCKETS 4096

struct cp_listings {
	pthread_mutex_t lock;
	struct cp_listing *b[NBUCKETS];	/* [lock] */
};

static size_t bucket(uint64_t dev, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ULL) ^ dev) % NBUCKETS;
}

errcode_t cp_listings_create(struct cp_listings **ret)
{
	struct cp_listings *t = calloc(1, sizeof(*t));

	if (!t)
		return ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*ret = t;
	return 0;
}

void cp_listing_free(struct cp_listing *l)
{
	if (l) {
		free(l->e);
		free(l->names);
		free(l);
	}
}

void cp_listings_free(struct cp_listings *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct cp_listing *l, *next;

		for (l = t->b[i]; l; l = next) {
			next = l->next;
			cp_listing_free(l);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void cp_listings_put(struct cp_listings *t, struct cp_listing *l)
{
	size_t i = bucket(l->dev, l->ino);

	pthread_mutex_lock(&t->lock);
	l->next = t->b[i];
	t->b[i] = l;
	pthread_mutex_unlock(&t->lock);
}

struct cp_listing *cp_listings_take(struct cp_listings *t, uint64_t dev,
				    uint64_t ino)
{
	struct cp_listing **p, *l = NULL;

	if (!t)
		return NULL;
	pthread_mutex_lock(&t->lock);
	for (p = &t->b[bucket(dev, ino)]; *p; p = &(*p)->next) {
		if ((*p)->dev == dev && (*p)->ino == ino) {
			l = *p;
			*p = l->next;
			l->next = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return l;
}

struct cp_listing *cp_listings_find(struct cp_listings *t, uint64_t dev,
				    uint64_t ino)
{
	struct cp_listing *l = NULL;

	if (!t)
		return NULL;
	pthread_mutex_lock(&t->lock);
	for (l = t->b[bucket(dev, ino)]; l; l = l->next)
		if (l->dev == dev && l->ino == ino)
			break;
	pthread_mutex_unlock(&t->lock);
	return l;
}

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cp_dent *)a)->name,
		      ((const struct cp_dent *)b)->name);
}

errcode_t cp_listing_read(int fd, struct cp_listing **ret)
{
	struct cp_listing *l = calloc(1, sizeof(*l));
	size_t cap = 0, used = 0, acap = 0;
	struct dirent *de;
	errcode_t err = 0;
	DIR *d;
	int dfd;

	if (!l)
		return ENOMEM;
	dfd = dup(fd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		err = errno;
		if (dfd >= 0)
			close(dfd);
		free(l);
		return err;
	}
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name) + 1;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (l->n == cap) {
			struct cp_dent *e;

			cap = cap ? cap * 2 : 16;
			e = realloc(l->e, cap * sizeof(*e));
			if (!e)
				goto nomem;
			l->e = e;
		}
		if (used + len > UINT32_MAX) {	/* name_off's range */
			closedir(d);
			cp_listing_free(l);
			return EOVERFLOW;
		}
		if (used + len > acap) {
			char *names;

			acap = acap ? acap * 2 : 512;
			while (acap < used + len)
				acap *= 2;
			names = realloc(l->names, acap);
			if (!names)
				goto nomem;
			l->names = names;
		}
		memcpy(l->names + used, de->d_name, len);
		memset(&l->e[l->n], 0, sizeof(l->e[l->n]));
		l->e[l->n].name_off = used;
		used += len;
		l->n++;
	}
	err = errno;
	closedir(d);
	if (err) {
		cp_listing_free(l);
		return err;
	}
	/* kept until the copy pass gets here, for every directory of the
	 * tree: trimmed to size (many directories hold a few names) */
	if (l->n) {
		struct cp_dent *e = realloc(l->e, l->n * sizeof(*e));
		char *names = realloc(l->names, used);

		if (e)
			l->e = e;
		if (names)
			l->names = names;
	}
	l->bytes = sizeof(*l) + l->n * sizeof(*l->e) + used;
	/* offsets into the arena become pointers once it stops moving */
	for (size_t i = 0; i < l->n; i++)
		l->e[i].name = l->names + l->e[i].name_off;
	if (l->n)
		qsort(l->e, l->n, sizeof(*l->e), dent_cmp);
	*ret = l;
	return 0;
nomem:
	closedir(d);
	cp_listing_free(l);
	return ENOMEM;
}
