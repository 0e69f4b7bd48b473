// Four conditions the compiler folds into one branch: each compares a sum of two input bytes
// (not a value the input holds, so input-to-state cannot copy it in), and at -O1 the `&&` chain
// is one test of the four comparisons and-ed. With edges alone, satisfying one condition shows
// nothing new and the four must be guessed at once (2^-32); labelfuzz-cc keeps each condition a
// branch of its own (`LABELFUZZ_FOLDED_CONDITIONS=1` does not), and each is found in turn.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  uint8_t s0 = data[0] + data[1], s1 = data[2] + data[3];
  uint8_t s2 = data[4] + data[5], s3 = data[6] + data[7];
  if (s0 == 0x5a && s1 == 0xa5 && s2 == 0x3c && s3 == 0xc3) __builtin_trap();
  return 0;
}
