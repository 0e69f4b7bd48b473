/* Bugs behind keywords compared with library routines: coverage sees one opaque call, so only
 * the routine's operands (intercepted by labelfuzz, as libFuzzer does) show the way in.
 *   "null"               memcmp against a keyword       -> SIGSEGV in null_keyword
 *   "labelfuzz-magic!"   a 16-byte magic header, memcmp -> SIGABRT
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int *volatile unset_slot = NULL;

__attribute__((noinline)) static void null_keyword(void) { *unset_slot = 1; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 4 && memcmp(data, "null", 4) == 0) null_keyword();
  if (size >= 16 && memcmp(data, "labelfuzz-magic!", 16) == 0) abort();
  return 0;
}
