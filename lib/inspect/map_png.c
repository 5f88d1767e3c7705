/*
 * map_png.c: the block-map picture as a PNG (libpng), drawn from the same
 * cell grid as the SVG (map.c's e3_map_grid) in the same colours: one
 * band per row of cells, E3_MAP_PNG_CELL_W x E3_MAP_PNG_CELL_H pixels a
 * cell, a white line between bands. No text: a PNG has no fonts, so the
 * legend and the counts are the caller's to print (st).
 *
 * libpng reports errors through a callback that must not return; ours
 * records nothing and jumps back here (the library never prints), and
 * warnings are dropped. No time chunk is written, so the same image
 * gives the same bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>

#include "map_int.h"

static void png_fail(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
	(void)png; (void)msg;
}

static void rgb_of(int k, png_byte rgb[3])
{
	const char *hex = k < 0 ? "#ffffff" : e3_map_class_colour(k);
	unsigned long v = strtoul(hex + 1, NULL, 16);

	rgb[0] = (v >> 16) & 0xff;
	rgb[1] = (v >> 8) & 0xff;
	rgb[2] = v & 0xff;
}

/* Fills row (RGB, the picture's width) with band's cells. */
static void band_row(const signed char *cells, unsigned band, png_bytep row)
{
	for (unsigned c = 0; c < E3_MAP_CELLS; c++) {
		png_byte rgb[3];

		rgb_of(cells[(size_t)band * E3_MAP_CELLS + c], rgb);
		for (unsigned x = 0; x < E3_MAP_PNG_CELL_W; x++)
			memcpy(row + 3 * (c * E3_MAP_PNG_CELL_W + x), rgb, 3);
	}
}

static errcode_t write_png(FILE *out, const signed char *cells,
			   unsigned bands)
{
	const unsigned w = E3_MAP_CELLS * E3_MAP_PNG_CELL_W;
	const unsigned band_h = E3_MAP_PNG_CELL_H + 1;
	png_structp png;
	png_infop info = NULL;
	png_bytep volatile row = NULL;
	png_bytep volatile gap = NULL;

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail,
				      png_warn);
	if (!png || !(info = png_create_info_struct(png)) ||
	    !(row = malloc(3 * w)) || !(gap = malloc(3 * w))) {
		png_destroy_write_struct(&png, &info);
		free(row);
		free(gap);
		return ENOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(row);
		free(gap);
		return EIO;
	}
	memset(gap, 0xff, 3 * w);
	png_init_io(png, out);
	png_set_IHDR(png, info, w, bands * band_h, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	/* unfiltered rows: a reader (the tests' python) needs no predictor
	 * to compare the cells with the text picture's */
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
	png_write_info(png, info);
	for (unsigned b = 0; b < bands; b++) {
		band_row(cells, b, row);
		for (unsigned y = 0; y < E3_MAP_PNG_CELL_H; y++)
			png_write_row(png, row);
		png_write_row(png, gap);
	}
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	free(row);
	free(gap);
	return 0;
}

errcode_t e3_map_png(ext2_filsys fs, FILE *out, struct e3_map_stats *st)
{
	struct e3_map_stats local;
	signed char *cells;
	errcode_t err;

	if (!st)
		st = &local;
	err = e3_map_grid(fs, st, &cells);
	if (!err)
		err = write_png(out, cells, st->bands);
	if (!err && (fflush(out) || ferror(out)))
		err = EIO;
	free(cells);
	return err;
}
