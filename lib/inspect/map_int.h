/*
 * map_int.h: the block-map picture's cell grid, for the renderers of
 * this folder other than map.c's SVG and text (map_png.c).
 */
#ifndef E3_MAP_INT_H
#define E3_MAP_INT_H

#include "e3_inspect.h"

/* The grid: st->bands rows of E3_MAP_CELLS cells, row by row, each the
 * e3_map_class most of its blocks have, or -1 past the last block.
 * st is filled as by e3_map_svg. *cells: free() it (NULL on an error). */
errcode_t e3_map_grid(ext2_filsys fs, struct e3_map_stats *st,
		      signed char **cells);
/* The class's colour as SVG writes it: "#rrggbb". */
const char *e3_map_class_colour(enum e3_map_class c);

#endif
