// Four 32-bit magic words in a row trap. CmpLog writes one word into the input, but nothing
// rewards a second one until all four are there: no edge or hit count changes on the way. How
// many times `word == MAGIC` came out equal in one execution (a comparison progress label)
// does, so each word is a step.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned run = 0;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t word;
    memcpy(&word, data + i, 4);
    run = word == 0x7a3c91e5u ? run + 1 : 0;
    if (run == 4) __builtin_trap();  // the planted bug
  }
  return 0;
}
