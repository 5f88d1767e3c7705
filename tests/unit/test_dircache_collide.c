/*
 * test_dircache_collide.c: test_dircache.c's tests again, against a
 * dircache whose name hash has only 13 values, so that most names of a
 * directory share a hash: the per-hash name counts, removing one name of
 * a shared hash (the hash must stay while others have it, or a duplicate
 * name could be created) and the fall-back to a full lookup when a name
 * is not in its hash's block all run, which 64-bit hashes never make
 * happen. dircache.c is compiled into this test with
 * E3_DC_TEST_HASH_VALUES; every dircache symbol is then defined here, so
 * the linker takes no dircache.o from the library.
 */
#define E3_DC_TEST_HASH_VALUES 13
#include "../../lib/fs/dircache.c"
#include "test_dircache.c"
