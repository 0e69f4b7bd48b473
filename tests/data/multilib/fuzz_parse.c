/* The libFuzzer harness for the library. */
#include "multilib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  multilib_parse(data, size);
  return 0;
}
