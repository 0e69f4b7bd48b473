/* Two planted bugs that raise the same signal (SIGSEGV) at two different sites. A fuzzer that
 * labels crashes by signal alone reports one bug; labelfuzz reports two, each with its minimal
 * reproducer: "H!" and "T?". */
#include <stddef.h>
#include <stdint.h>

/* Volatile, so the compiler cannot prove the writes below fault and drop them. */
int *volatile unset_slot = NULL;

__attribute__((noinline)) static void check_header(const uint8_t *data) {
  if (data[0] == 'H' && data[1] == '!') *unset_slot = 1;
}

__attribute__((noinline)) static void check_trailer(const uint8_t *data, size_t size) {
  if (data[size - 2] == 'T' && data[size - 1] == '?') *unset_slot = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  check_header(data);
  check_trailer(data, size);
  return 0;
}
