/*
 * test_rsv_tree.c: the window set (lib/alloc/rsv_tree.c) in both forms against a
 * plain array model: 100k random inserts, removes and lookups with a fixed
 * seed, the validator after every step, and proof that the validator does
 * notice a broken set.
 */
#include <stdint.h>
#include "unit.h"
#include "alloc/rsv_tree.h"

#define POOL	1000
#define SPACE	200000		/* blocks 1..SPACE-1 */
#define STEPS	100000

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static struct e3_rsv pool[POOL];

/* The model: every linked pool entry; linear scans are the reference. */
static bool model_overlaps(blk64_t s, blk64_t e)
{
	for (int i = 0; i < POOL; i++)
		if (pool[i].linked && pool[i].start <= e && pool[i].end >= s)
			return true;
	return false;
}

static struct e3_rsv *model_find(struct rsv_set *set, blk64_t b)
{
	struct e3_rsv *best = &set->dummy;

	for (int i = 0; i < POOL; i++)
		if (pool[i].linked && pool[i].start <= b &&
		    pool[i].start > best->start)
			best = &pool[i];
	return best;
}

static struct e3_rsv *model_next(struct e3_rsv *r)
{
	struct e3_rsv *best = NULL;

	for (int i = 0; i < POOL; i++)
		if (pool[i].linked && pool[i].start > r->start &&
		    (!best || pool[i].start < best->start))
			best = &pool[i];
	return best;
}

static void random_ops(enum e3_alloc_mode mode)
{
	struct rsv_set set;
	char why[200];
	unsigned inserts = 0, rejects = 0, bad_checks = 0, bad_finds = 0;
	uint64_t linked = 0;

	memset(pool, 0, sizeof(pool));
	rng = 0x9e3779b97f4a7c15ULL;
	rsv_set_init(&set, mode, 1, SPACE - 1);
	for (int step = 0; step < STEPS; step++) {
		struct e3_rsv *r = &pool[next_rand() % POOL];
		unsigned op = (unsigned)(next_rand() % 3);

		if (op == 0 && !r->linked) {
			blk64_t s = 1 + next_rand() % (SPACE - 100);
			blk64_t e = s + next_rand() % 64;
			bool clash = model_overlaps(s, e);
			struct e3_rsv *hint = (next_rand() & 1) ?
				model_find(&set, s) : NULL;

			r->start = s;
			r->end = e;
			if (rsv_set_insert(&set, r, hint) == 0) {
				inserts++;
				linked++;
				CHECK(!clash);
			} else {
				rejects++;
				CHECK(clash);
				CHECK(!r->linked);
			}
		} else if (op == 1 && r->linked) {
			rsv_set_remove(&set, r);
			linked--;
		} else {
			blk64_t b = next_rand() % SPACE;
			struct e3_rsv *f = rsv_set_find(&set, b, NULL);

			if (f != model_find(&set, b) ||
			    rsv_set_next(&set, f) != model_next(f))
				bad_finds++;
			/* List mode may start from a linked node before b. */
			if (mode == E3_ALLOC_LIST && r->linked && r->start <= b &&
			    rsv_set_find(&set, b, r) != model_find(&set, b))
				bad_finds++;
		}
		if (!rsv_set_check(&set, why, sizeof(why))) {
			if (!bad_checks++)
				fprintf(stderr, "  step %d: %s\n", step, why);
		}
		if (set.count != linked)
			bad_checks++;
	}
	CHECK(bad_checks == 0);
	CHECK(bad_finds == 0);
	/* The run must really have exercised both outcomes. */
	CHECK(inserts > 10000);
	CHECK(rejects > 1000);
}

static void test_rbtree_random(void)
{
	random_ops(E3_ALLOC_RBTREE);
}

static void test_list_random(void)
{
	random_ops(E3_ALLOC_LIST);
}

static void validator_catches(enum e3_alloc_mode mode)
{
	struct rsv_set set;
	struct e3_rsv a = { .start = 10, .end = 19 }, b = { .start = 30, .end = 39 };
	char why[200] = "";

	rsv_set_init(&set, mode, 1, 99);
	CHECK_OK(rsv_set_insert(&set, &a, NULL));
	CHECK_OK(rsv_set_insert(&set, &b, NULL));
	CHECK(rsv_set_check(&set, why, sizeof(why)));
	/* Overlap, refused by insert ... */
	struct e3_rsv c = { .start = 35, .end = 50 };
	CHECK(rsv_set_insert(&set, &c, NULL) == E3_RSV_TREE_BAD);
	struct e3_rsv d = { .start = 5, .end = 10 };
	CHECK(rsv_set_insert(&set, &d, NULL) == E3_RSV_TREE_BAD);
	/* ... and found by the validator when made behind its back. */
	a.end = 30;
	CHECK(!rsv_set_check(&set, why, sizeof(why)));
	CHECK(strstr(why, "overlaps") != NULL);
	a.end = 19;
	b.end = 100;			/* past the last block */
	CHECK(!rsv_set_check(&set, why, sizeof(why)));
	CHECK(strstr(why, "outside") != NULL);
	b.end = 39;
	set.count++;
	CHECK(!rsv_set_check(&set, why, sizeof(why)));
	set.count--;
	CHECK(rsv_set_check(&set, why, sizeof(why)));
	/* Lookups at the edges. */
	CHECK(rsv_set_find(&set, 9, NULL) == &set.dummy);
	CHECK(rsv_set_find(&set, 10, NULL) == &a);
	CHECK(rsv_set_find(&set, 29, NULL) == &a);
	CHECK(rsv_set_find(&set, 99, NULL) == &b);
	CHECK(rsv_set_next(&set, &b) == NULL);
	rsv_set_remove(&set, &a);
	CHECK(rsv_set_find(&set, 15, NULL) == &set.dummy);
	CHECK(set.count == 1);
}

static void test_validator_catches_rbtree(void)
{
	validator_catches(E3_ALLOC_RBTREE);
}

static void test_validator_catches_list(void)
{
	validator_catches(E3_ALLOC_LIST);
}

int main(void)
{
	RUN(test_rbtree_random);
	RUN(test_list_random);
	RUN(test_validator_catches_rbtree);
	RUN(test_validator_catches_list);
	return unit_done();
}
