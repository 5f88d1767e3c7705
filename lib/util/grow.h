/*
 * grow.h: room for one more element at the end of an array that doubles
 * when full (the first allocation holds `first`). One copy of the
 * realloc-and-double step the loaders, the block map and htree need.
 */
#ifndef E3_GROW_H
#define E3_GROW_H

#include <stdlib.h>

/* The array v of n used elements of elem bytes, *cap allocated, with
 * room for element n: v itself, or a larger copy (*cap updated), or NULL
 * when memory is short (v and *cap untouched, still valid). */
static inline void *e3_grow(void *v, size_t n, size_t *cap, size_t elem,
			    size_t first)
{
	size_t c;

	if (n < *cap)
		return v;
	c = *cap ? *cap * 2 : first;
	v = realloc(v, c * elem);
	if (v)
		*cap = c;
	return v;
}

#endif
