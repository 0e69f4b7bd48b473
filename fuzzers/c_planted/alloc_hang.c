// A hang spent almost entirely inside malloc and free (blocks too big for the thread cache, so
// the allocator takes its lock): the timeout must still be reported, not deadlock the fuzzer
// whose handler allocates.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static void *volatile keep;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 1 && data[0] == 'H') {
    for (;;) {
      void *a = malloc(70000);
      void *b = malloc(90000);
      keep = a;
      free(b);
      free(a);
    }
  }
  return 0;
}
