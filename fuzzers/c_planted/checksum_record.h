// The record `checksum_gate.c` and `checksum_length.c` read: a body, then the Adler-32 of the
// body, big-endian, as a zlib stream ends.
#include <stddef.h>
#include <stdint.h>

static uint32_t adler32(const uint8_t *data, size_t size) {
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < size; i++) {
    a = (a + data[i]) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

// Whether a record of `size` bytes ends in the checksum of its body (at least one byte).
static int record_checks_out(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  size_t body = size - 4;
  const uint8_t *sum = data + body;
  uint32_t stored = (uint32_t)sum[0] << 24 | (uint32_t)sum[1] << 16 | (uint32_t)sum[2] << 8 | sum[3];
  return stored == adler32(data, body);
}
