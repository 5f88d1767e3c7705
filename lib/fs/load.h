/*
 * load.h: lib/load's private hooks into the image's life cycle.
 */
#ifndef E3_LOAD_H
#define E3_LOAD_H

#include "image.h"

/* Called by e3_image_open for writers, after the allocator and journal are
 * up. Caller holds nothing (only thread). */
errcode_t e3_load_init(struct e3_image *img);
/* Called by e3_image_close with fs_lock held: every file must be closed;
 * flushes what load keeps in memory. Frees img->load. */
errcode_t e3_load_fini(struct e3_image *img);
/* Frees img->load without writing. */
void e3_load_abort(struct e3_image *img);

#endif
