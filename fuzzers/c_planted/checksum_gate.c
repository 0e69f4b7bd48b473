// A record that ends in a checksum of the rest (Adler-32, big-endian, as a zlib stream ends),
// and past the check a word the target compares one letter at a time. Input-to-state writes
// the checksum into an entry, but every mutant that then changes a letter changes what the
// checksum is computed from, fails the check and shows nothing new; the word is found only if
// each such mutant gets its checksum repaired (`--cmplog-repair`).
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  size_t body = size - 4;
  const uint8_t *sum = data + body;
  uint32_t stored = (uint32_t)sum[0] << 24 | (uint32_t)sum[1] << 16 | (uint32_t)sum[2] << 8 | sum[3];
  if (stored != adler32(data, body)) return 0;
  if (body >= 4 && data[0] == 'G') {
    if (data[1] == 'A') {
      if (data[2] == 'T') {
        if (data[3] == 'E') __builtin_trap();  // the planted bug: "GATE" and its checksum
      }
    }
  }
  return 0;
}
