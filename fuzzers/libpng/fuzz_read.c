/* libpng: the input is a PNG file, decoded from memory the way an image viewer would: the
 * header, the transformations most programs ask for (palette and low bit depths expanded, 16
 * bits stripped, alpha and gray handled, interlacing), every row, and the chunks after the
 * image. Images larger than a few megapixels are skipped to keep executions small. */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "png.h"

enum { MAX_PIXELS = 1 << 22 };

struct source {
  const uint8_t *data;
  size_t size;
  size_t offset;
};

static void read_from_memory(png_structp png, png_bytep out, size_t length) {
  struct source *source = png_get_io_ptr(png);
  if (length > source->size - source->offset) png_error(png, "read past the end of the input");
  memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

static void quiet_warning(png_structp png, png_const_charp message) {
  (void)png;
  (void)message;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) return 0;

  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, quiet_warning);
  if (png == NULL) return 0;
  png_infop info = png_create_info_struct(png);
  png_infop end_info = png_create_info_struct(png);
  png_bytep row = NULL;
  if (info == NULL || end_info == NULL) {
    png_destroy_read_struct(&png, &info, &end_info);
    return 0;
  }
  /* Volatile: modified between setjmp and a longjmp back here. */
  png_bytep volatile row_to_free = NULL;
  if (setjmp(png_jmpbuf(png))) {
    free(row_to_free);
    png_destroy_read_struct(&png, &info, &end_info);
    return 0;
  }

  struct source source = {data, size, 0};
  png_set_read_fn(png, &source, read_from_memory);
  png_set_user_limits(png, 1 << 14, 1 << 14);
  png_set_chunk_malloc_max(png, 1 << 20);
  png_read_info(png, info);

  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
  if ((uint64_t)width * height > MAX_PIXELS) png_error(png, "image too large for fuzzing");

  png_set_expand(png);
  png_set_strip_16(png);
  png_set_gray_to_rgb(png);
  png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
  int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);

  row = malloc(png_get_rowbytes(png, info));
  row_to_free = row;
  if (row == NULL) png_error(png, "out of memory");
  for (int pass = 0; pass < passes; pass++)
    for (png_uint_32 y = 0; y < height; y++) png_read_row(png, row, NULL);
  png_read_end(png, end_info);

  free(row);
  png_destroy_read_struct(&png, &info, &end_info);
  return 0;
}
