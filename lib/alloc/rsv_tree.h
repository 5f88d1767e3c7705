/*
 * rsv_tree.h: the set of reservation windows of one image, internal to
 * lib/alloc*.c and its unit test. One interface, two interchangeable
 * forms chosen at init: a red-black tree (libbsd <sys/tree.h>) ordered by
 * window start, or a sorted TAILQ searched from its head as the 2004 list
 * code did. Both hold a dummy window [0, 0] so every lookup has a
 * predecessor. The caller serialises every call (rsv_lock in e3_alloc).
 */
#ifndef E3_RSV_TREE_H
#define E3_RSV_TREE_H

#include <stdbool.h>
#include "alloc.h"

RB_HEAD(rsv_rb, e3_rsv);
TAILQ_HEAD(rsv_list, e3_rsv);

struct rsv_set {
	enum e3_alloc_mode mode;	/* RBTREE or LIST (NONE keeps it empty) */
	struct rsv_rb rb;
	struct rsv_list list;
	struct e3_rsv dummy;		/* [0, 0], always linked */
	uint64_t count;			/* windows, dummy excluded */
	uint64_t headroom;		/* sum of the linked windows' headroom */
	blk64_t first, last;		/* windows must lie in [first, last] */
};

void rsv_set_init(struct rsv_set *s, enum e3_alloc_mode mode,
		  blk64_t first, blk64_t last);
/* The window with the greatest start <= blk (the dummy when none). In
 * list mode the walk starts at `from` when it is linked and starts at or
 * before blk, else at the list head; the tree tries `from` and the two
 * windows after it before descending from the root. */
struct e3_rsv *rsv_set_find(struct rsv_set *s, blk64_t blk,
			    struct e3_rsv *from);
/* The window after r in block order, NULL after the last. */
struct e3_rsv *rsv_set_next(struct rsv_set *s, struct e3_rsv *r);
/* Links r ([r->start, r->end] set). prev: r's predecessor if the caller
 * knows it (list mode then links in O(1)), else NULL. Returns
 * E3_RSV_TREE_BAD (and links nothing) if r would overlap a window. */
errcode_t rsv_set_insert(struct rsv_set *s, struct e3_rsv *r,
			 struct e3_rsv *prev);
void rsv_set_remove(struct rsv_set *s, struct e3_rsv *r);
/* Sets r->headroom, keeping the set's sum right whether r is linked or
 * not (a linked window's headroom is counted in s->headroom). */
void rsv_set_headroom(struct rsv_set *s, struct e3_rsv *r, uint32_t h);
/* Ordered, no overlaps, inside [first, last], count and headroom sum
 * match the links. */
bool rsv_set_check(struct rsv_set *s, char *why, size_t whylen);

#endif
