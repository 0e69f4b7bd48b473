/* Two heap bugs that plain signals would not see at all (nothing faults): AddressSanitizer
 * reports them, and labelfuzz labels each by its bug type and site. Minimal reproducers:
 * "OV\0" (overflow) and "UF" (use after free). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Volatile, so the compiler keeps the allocations. */
char *volatile heap_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 3 && data[0] == 'O' && data[1] == 'V') {
    heap_sink = malloc(2);
    memcpy(heap_sink, data, size); /* writes past the 2-byte block */
    free(heap_sink);
  }
  if (size >= 2 && data[0] == 'U' && data[1] == 'F') {
    heap_sink = malloc(4);
    free(heap_sink);
    heap_sink[0] = (char)data[1]; /* writes to freed memory */
  }
  return 0;
}
