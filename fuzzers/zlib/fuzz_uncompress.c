/* zlib: uncompress() on the input, and for every stream that decompresses, the round trip
 * compress(uncompress(x)) -> uncompress must give the same bytes back (an abort otherwise). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zlib.h"

enum { OUTPUT_LIMIT = 1 << 16 };

static uint8_t plain[OUTPUT_LIMIT];
static uint8_t packed[OUTPUT_LIMIT + OUTPUT_LIMIT / 8 + 64];
static uint8_t again[OUTPUT_LIMIT];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uLongf plain_len = sizeof plain;
  if (uncompress(plain, &plain_len, data, (uLong)size) != Z_OK) return 0;

  uLongf packed_len = sizeof packed;
  if (compress2(packed, &packed_len, plain, plain_len, Z_BEST_SPEED) != Z_OK) abort();
  uLongf again_len = sizeof again;
  if (uncompress(again, &again_len, packed, packed_len) != Z_OK) abort();
  if (again_len != plain_len || memcmp(again, plain, plain_len) != 0) abort();
  return 0;
}
