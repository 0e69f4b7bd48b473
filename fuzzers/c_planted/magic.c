// A 32-bit magic number compared whole: edge coverage sees nothing until all four bytes match.
// With -use_value_profile=1 each bit that matches is a step (a new label).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size != 4) return 0;
  uint32_t value;
  memcpy(&value, data, 4);
  if (value == 0x5a7c31e9u) {
    *(volatile int *)0 = 1;  // the planted bug
  }
  return 0;
}
