// A header whose size field is a LEB128 variable-length integer (7 bits a byte, the high bit
// marking more), as xz's Block Header states its sizes: the target compares the decoded value,
// whose bytes are in no byte of the input, so input-to-state replacement finds it only by
// encoding the compared values (`--cmplog-transforms`).
#include <stddef.h>
#include <stdint.h>

// The size the field must state, computed elsewhere in a real format (xz: the bytes the block
// decoded to). Read at run time, the compiler cannot fold it into the decoder.
static volatile uint64_t expected_size = 0x1a2b3c4u;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t stated_size = 0;
  size_t i = 0;
  for (;; i++) {
    if (i == size || i == 9) return 0;  // unterminated, or longer than 63 bits
    stated_size |= (uint64_t)(data[i] & 0x7f) << (7 * i);
    if (!(data[i] & 0x80)) break;
  }
  if (stated_size == expected_size) {
    __builtin_trap();  // the planted bug: the field is c4 e7 8a 0d
  }
  return 0;
}
