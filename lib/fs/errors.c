/*
 * errors.c: registering the com_err tables. Kept apart from image.c so a
 * tool that never opens an image (e3mkfs) links without the allocator,
 * journal and loader.
 */
#include "e3img.h"

void e3_init_errors(void)
{
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_e3im_error_table);
}
