// A harness that talks: every input writes to stdout and stderr, as many real libraries do on
// bad input. Its branches also tell bytes with the top bit set from plain text, so a corpus
// built without -only_ascii holds non-ASCII inputs.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static volatile int sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  printf("TARGET-STDOUT %zu\n", size);
  fprintf(stderr, "TARGET-STDERR %zu\n", size);
  for (size_t i = 0; i < size && i < 8; i++) {
    if (data[i] >= 0x80) {
      sink += i;
    } else if (data[i] < 0x20) {
      sink -= i;
    } else {
      sink ^= data[i];
    }
  }
  return 0;
}
