// A header whose length field counts 4-byte units minus one, as xz's stream footer stores its
// index size: the target compares the scaled value, which is in no byte of the input, so
// input-to-state replacement finds it only by undoing the scaling (`--cmplog-transforms`).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// The size the length field must declare, computed elsewhere in a real format (xz: the index
// as decoded). Read at run time, the compiler cannot fold the scaling into the constant.
static volatile uint64_t expected_size = 0x1a2b3c40u;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  uint32_t units_minus_one;
  memcpy(&units_minus_one, data, 4);
  uint64_t declared_size = ((uint64_t)units_minus_one + 1) * 4;
  if (declared_size == expected_size) {
    __builtin_trap();  // the planted bug: units_minus_one is 0x068acf0f
  }
  return 0;
}
