// A thousand equal bytes trap. Below 1000 bytes nothing is read, so no label leads toward the
// length, and havoc's byte mutations grow an input by at most 16 bytes a step: only a long run
// (`--long-runs`, one byte repeated 17 to 4096 times) writes it in one mutation.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1000) return 0;
  for (size_t i = 1; i < 1000; i++) {
    if (data[i] != data[0]) return 0;
  }
  __builtin_trap();  // the planted bug
}
