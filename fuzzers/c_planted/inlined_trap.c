/* One checked division with two call sites, both inlined into `evaluate` at -O1: one faulting
 * source line, two copies of its trap instruction. With debug information the crash label is
 * that line, so both copies are one bug; without it, each copy has its own offset. */
#include <stddef.h>
#include <stdint.h>

static inline int checked_div(int a, int b) {
  if (b == 0) __builtin_trap(); /* the planted bug */
  return a / b;
}

__attribute__((noinline)) static int evaluate(const uint8_t *d, size_t n) {
  if (n < 3) return 0;
  if (d[0] == 'a') return checked_div(d[1], d[2] - '0');
  if (d[0] == 'b') return checked_div(d[2], d[1] - '0') + 1;
  return 0;
}

volatile int evaluated;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  evaluated = evaluate(data, size);
  return 0;
}
